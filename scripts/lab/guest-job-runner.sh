#!/bin/sh
# Inside the lab's guest, at boot: mount the lab disk (/dev/vdb), run its job.sh with its output
# on the console and in out/job.log, and leave the job's exit status in out/rc. The unit powers
# the guest off afterwards.
set -u
echo "lab: job starts at $(cut -d' ' -f1 /proc/uptime) s of uptime"
mkdir -p /lab && mount /dev/vdb /lab || { echo "lab: no lab disk"; exit 1; }
mkdir -p /lab/out
sh /lab/job.sh 2>&1 | tee /lab/out/job.log
rc=$(cat /lab/out/rc 2>/dev/null || echo missing)
echo "lab: job ends with rc $rc at $(cut -d' ' -f1 /proc/uptime) s of uptime"
sync; umount /lab
echo "lab: powering off"
