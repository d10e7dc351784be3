#!/usr/bin/env bash
# A throwaway single-node SLURM cluster on this machine, for tests/test_slurm.py.
#
#   tests/slurm/local_slurm.sh start STATE_DIR   # install if missing, start munged/slurmctld/slurmd
#   tests/slurm/local_slurm.sh stop STATE_DIR    # stop exactly the daemons `start` started
#
# Everything lives under STATE_DIR (config, spool, state, logs, pid files, munge socket), on
# private ports, so an existing SLURM or munge on the machine is left alone. Clients find the
# cluster through SLURM_CONF=STATE_DIR/slurm.conf. The node advertises two `gpu` GRES (backed
# by /dev/null and /dev/zero), so that `sbatch --gpus=1` is accepted and scheduled like on a GPU
# cluster, two GPU jobs at a time; no GPU is needed or used. No accounting
# (AccountingStorageType=none): job status comes from `squeue`, and MinJobAge keeps finished jobs
# visible to it (and to the test's `scontrol show job`) for an hour.
#
# Exit status 77 from `start` means "cannot run here" (not root, no apt-get, install failed);
# the reason is the last line on stderr.
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge)
# The partitions of profiles/slurm/config.yaml, both on the one local node.
PARTITIONS=(cpu gpu)
CTLD_PORT=16817
SLURMD_PORT=16818
SYSTEM_CONF=/etc/slurm/slurm.conf

skip() {
    echo "cannot run a local SLURM here: $*" >&2
    exit 77
}

need_install() {
    local tool
    for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo; do
        command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" \
            >/dev/null 2>&1 || return 0
    done
    return 1
}

install_packages() {
    [[ $(id -u) == 0 ]] || skip "slurm-wlm/munge are missing and installing them needs root"
    command -v apt-get >/dev/null || skip "slurm-wlm/munge are missing and there is no apt-get"
    echo "installing ${PACKAGES[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 || skip "apt-get update failed (no network or no package mirror?)"
    apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >&2 \
        || skip "apt-get install ${PACKAGES[*]} failed"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local seconds=$1 what=$2
    shift 2
    for ((i = 0; i < seconds * 4; i++)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.25
    done
    echo "timed out after ${seconds}s waiting for $what" >&2
    return 1
}

write_config() {
    local dir=$1 host cpus mem_mb
    host=$(hostname -s)
    # the machine's processors: nproc alone honours OMP_NUM_THREADS, which the tests set to 1
    cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
    mem_mb=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo)
    mkdir -p "$dir"/{ctld,spool,log}
    cat >"$dir/slurm.conf" <<EOF
# Written by tests/slurm/local_slurm.sh: one node, no accounting, private ports.
ClusterName=tstest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge.socket
CredType=cred/munge
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=3600
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus Sockets=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$mem_mb Gres=gpu:2 State=UNKNOWN
EOF
    local default=YES partition
    for partition in "${PARTITIONS[@]}"; do
        echo "PartitionName=$partition Nodes=$host Default=$default MaxTime=INFINITE State=UP" \
            >>"$dir/slurm.conf"
        default=NO
    done
    # slurmd counts a gpu GRES only with a device file; /dev/null and /dev/zero stand in
    # (task/none: no device cgroup is set up, so nothing is ever bound to them)
    printf 'NodeName=%s Name=gpu File=%s\n' "$host" /dev/null "$host" /dev/zero >"$dir/gres.conf"
}

start() {
    local dir=$1
    if need_install; then install_packages; fi
    export PATH="$PATH:/usr/sbin:/sbin"
    [[ $(id -u) == 0 ]] || skip "slurmd must run as root to launch jobs"
    # The job step that snakemake-executor-plugin-slurm starts inside each job drops SLURM_CONF
    # from its environment, so `srun` there reads the default /etc/slurm/slurm.conf: point it
    # at ours for the test's lifetime, unless the machine has a SLURM config of its own.
    if [[ -e $SYSTEM_CONF || -L $SYSTEM_CONF ]]; then
        skip "$SYSTEM_CONF exists (a configured SLURM); not touching it"
    fi
    write_config "$dir"
    export SLURM_CONF=$dir/slurm.conf
    mkdir -p "$(dirname "$SYSTEM_CONF")"
    ln -s "$SLURM_CONF" "$SYSTEM_CONF"

    local key=/etc/munge/munge.key
    if [[ ! -r $key ]]; then
        key=$dir/munge.key
        mungekey --create --keyfile="$key" >&2
    fi
    munged --force --socket="$dir/munge.socket" --key-file="$key" --pid-file="$dir/munged.pid" \
        --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"
    wait_for 20 munged munge -n -S "$dir/munge.socket"

    slurmctld -c -f "$SLURM_CONF"
    wait_for 30 slurmctld scontrol ping
    slurmd -f "$SLURM_CONF"
    wait_for 60 "the node to come up" bash -c "sinfo -h -N -o %t | grep -qx idle"
    echo "local SLURM up: SLURM_CONF=$SLURM_CONF" >&2
}

stop() {
    local dir=$1 name pid
    export PATH="$PATH:/usr/sbin:/sbin" SLURM_CONF=$dir/slurm.conf
    # cancel what is left of the test's jobs (only this cluster's: SLURM_CONF points at it)
    [[ -s $dir/slurmctld.pid ]] && timeout 20 scancel --user="$(id -un)" 2>/dev/null
    for name in slurmd slurmctld munged; do
        [[ -s $dir/$name.pid ]] || continue
        pid=$(<"$dir/$name.pid")
        kill "$pid" 2>/dev/null || continue
        for ((i = 0; i < 80; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.25
        done
        kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
        rm -f "$dir/$name.pid"
    done
    if [[ -L $SYSTEM_CONF && $(readlink "$SYSTEM_CONF") == "$dir/slurm.conf" ]]; then
        rm -f "$SYSTEM_CONF"
    fi
    return 0
}

case ${1:-} in
start) start "${2:?state directory}" ;;
stop) stop "${2:?state directory}" ;;
*)
    echo "usage: $0 {start|stop} STATE_DIR" >&2
    exit 2
    ;;
esac
