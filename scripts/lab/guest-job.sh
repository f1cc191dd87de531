# The cgroup v2 lab's job, run in the guest at boot by hazmat-lab-runner from the lab disk
# (/lab): what the host's cgroups, Docker and hazmat are, then the tests whose promises rest on
# the kernel's cgroups, as junit XML in /lab/out. Its exit status goes to /lab/out/rc.
set -u
cd /lab
. ./lab.env
VENV=/opt/hazmat-venv
export PATH="$VENV/bin:$PATH" PYTHONDONTWRITEBYTECODE=1
mark() { echo "lab: --- $* (uptime $(cut -d' ' -f1 /proc/uptime) s)"; }

mark "cgroups"
echo "kernel $(uname -r)"
echo "/sys/fs/cgroup is $(stat -fc %T /sys/fs/cgroup)"
echo "controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
echo "subtree_control: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

if [ "$LAB_DRIVER" != systemd ]; then
    mark "Docker's cgroup driver set to $LAB_DRIVER"
    sed -i "s/native.cgroupdriver=[a-z]*/native.cgroupdriver=$LAB_DRIVER/" /etc/docker/daemon.json
    systemctl restart docker
fi
mark "docker"
i=0; until docker info >/dev/null 2>&1 || [ $i -ge 120 ]; do i=$((i + 1)); sleep 1; done
docker info --format 'server {{.ServerVersion}}; cgroup driver {{.CgroupDriver}}, version {{.CgroupVersion}}; default runtime {{.DefaultRuntime}}; runtimes {{range $k, $v := .Runtimes}}{{$k}} {{end}}; kernel {{.KernelVersion}}'
runc --version | head -n 1; runsc --version | head -n 1

mark "docker load $LAB_REFS (in the background), hazmat install"
docker load -i images.tar > /lab/out/docker-load.log 2>&1 &
loading=$!
pip install --quiet --no-index --no-deps --disable-pip-version-check ./hazmat-*.whl
# the compiled agent built on the host (run-lab.sh), where hazmat's two tiers look for it
python - <<'PY'
import shutil
from hazmat._cache import cache_folder
from hazmat.backends.oci.rootfs import oci_dir
for folder in (cache_folder(), oci_dir()):
    shutil.copytree("/lab/agent", folder / "agent", dirs_exist_ok=True)
PY
wait "$loading"; echo "docker load exit status $?"; cat /lab/out/docker-load.log
mark "hazmat doctor"
# what it must say of this host (its exit status is not 0: the images the lab did not load)
hazmat doctor > /lab/out/doctor.txt 2>&1; echo "doctor exit status $?"
cat /lab/out/doctor.txt
checks=0
for said in "kernel features: cgroup v2" "resource monitoring: cgroup v2 files readable" \
    "backend: oci (auto" "cgroups: cgroup v2: this process can create them" \
    "host setup: cgroup v2 with Docker's $LAB_DRIVER cgroup driver, rootful Docker: tested"; do
    grep -qF "$said" /lab/out/doctor.txt || { echo "lab: FAIL: hazmat doctor did not say '$said'"; checks=1; }
done

mark "pytest"
cd src
# every tier and runtime: the few tests chosen are about what the cgroups count
export HAZMAT_TEST_MATRIX=full
eval "set -- $LAB_TESTS"  # shell words: -k "a or b" stays one argument (run-lab.sh's subsets)
export LAB_REFS
PYTHONPATH=/lab python -m pytest -p no:cacheprovider -p lab_plugin -v -o junit_family=xunit2 \
    --junitxml=/lab/out/junit.xml "$@"
rc=$?

mark "what is left"
# every cgroup hazmat made (the OCI tier's, hazmat/<id>, and its prerequisites' probe) is
# gone, and every container
left=$(find /sys/fs/cgroup -mindepth 1 -type d \( -path '/sys/fs/cgroup/hazmat/*' \
    -o -name 'hazmat-probe-*' \) 2>/dev/null)
if [ -n "$left" ]; then echo "lab: FAIL: cgroups left:"; echo "$left"; checks=1; fi
containers=$(docker ps -aq --filter label=hazmat.backend)
if [ -n "$containers" ]; then echo "lab: FAIL: containers left: $containers"; checks=1; fi
[ "$checks" = 0 ] || [ "$rc" != 0 ] || rc=1
echo "$rc" > /lab/out/rc
mark "done"
