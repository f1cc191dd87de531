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

mark "docker load $LAB_REFS"
docker load -i images.tar

mark "hazmat install"
pip install --quiet --no-index --no-deps --disable-pip-version-check ./hazmat-*.whl
mark "hazmat doctor"
hazmat doctor; echo "doctor exit status $?"

mark "pytest"
cd src
# every tier and runtime: the few tests chosen are about what the cgroups count
export HAZMAT_TEST_MATRIX=full
if [ -n "$LAB_TESTS" ]; then
    eval "set -- $LAB_TESTS"  # shell words: -k "a or b" stays one argument
else
    set -- tests/execution/test_pool.py tests/execution/test_cpu_clock.py \
        tests/backends/oci/test_oci_parts.py tests/execution/test_oci.py \
        tests/execution/test_runtime_verdicts.py tests/execution/test_abuse.py \
        -k "peak_memory or oom_kill or test_cpu_clock or prerequisites or auto_is \
            or memory_cgroup or tmpfs_past or memory_near or no_engine \
            or fork_bomb_is_contained_by_the_pids"
fi
export LAB_REFS
PYTHONPATH=/lab python -m pytest -p no:cacheprovider -p lab_plugin -v -o junit_family=xunit2 \
    --junitxml=/lab/out/junit.xml "$@"
echo $? > /lab/out/rc
mark "done"
