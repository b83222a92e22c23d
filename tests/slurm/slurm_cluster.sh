#!/usr/bin/env bash
# A real one-host Slurm cluster in a private directory, for colo's tests:
# munged, slurmctld and slurmd on free loopback ports, two GPUs declared to
# Slurm as character devices that are no GPUs (mknod c 1 3, /dev/null's
# numbers), each cut into 1 GiB shards by `colo slurm conf`.
#
#   slurm_cluster.sh start DIR COLO [GPU_MEM=80GiB]  # prints "export SLURM_CONF=..."
#   slurm_cluster.sh restart-ctld DIR                # stop slurmctld and start it on its saved state
#   slurm_cluster.sh stop DIR
#
# Exits 77 (skip) when this machine cannot run Slurm: not root, or the
# Debian packages slurmctld, slurmd, slurm-client and munge are missing.
#
# COLO_SLURM_GPUS=real declares the machine's own GPUs (NVML, /dev/nvidiaN)
# instead; COLO_SLURM_PLUGIN_DIR points slurm.conf's PluginDir at carried
# plugins (tests/gpu/slurm_on_gpu.sh, scripts/slurm-carry.sh); COLO_SLURM_CGROUP
# (e.g. cgroup/v2) writes a cgroup.conf for machines without systemd;
# COLO_SLURM_DAEMON_LIBS is the LD_LIBRARY_PATH of the daemons alone.
set -euo pipefail
action=$1 dir=$2

skip() { echo "slurm_cluster: cannot start Slurm here: $*" >&2; exit 77; }

wait_for() {  # wait_for SECONDS COMMAND...: until the command succeeds
  local limit=$1; shift
  for _ in $(seq $((limit * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}

daemon() {  # runs a daemon with its own library path, when one is given
  env ${COLO_SLURM_DAEMON_LIBS:+LD_LIBRARY_PATH=$COLO_SLURM_DAEMON_LIBS} "$@"
}

free_port() {
  python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

start_ctld() {
  SLURM_CONF=$dir/slurm.conf daemon slurmctld "$@"
  wait_for 20 env SLURM_CONF="$dir/slurm.conf" scontrol ping || { tail -20 "$dir/log/slurmctld.log" >&2; return 1; }
}

case $action in
start)
  colo=$3 gpu_mem=${4:-80GiB}
  [ "$(id -u)" = 0 ] || skip "not root (slurmd starts jobs as their user)"
  for p in munged slurmctld slurmd sbatch squeue scontrol sinfo mknod; do
    command -v "$p" >/dev/null || skip "$p missing (Debian slurmctld slurmd slurm-client munge)"
  done
  rm -rf "$dir" && mkdir -p "$dir"/{state,spool,log,munge,dev}
  if [ "${COLO_SLURM_GPUS:-}" != real ]; then
    mknod "$dir/dev/nvidia0" c 1 3 && mknod "$dir/dev/nvidia1" c 1 3 || skip "mknod not allowed"
  fi
  daemon mungekey -c -k "$dir/munge/munge.key" -b 1024 >/dev/null 2>&1 || skip "mungekey failed"
  chmod 600 "$dir/munge/munge.key"
  daemon munged -f --socket="$dir/munge/sock" --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/pid" \
    --log-file="$dir/munge/log" --seed-file="$dir/munge/seed" || skip "munged does not start"
  host=$(hostname)
  if [ "${COLO_SLURM_GPUS:-}" = real ]; then
    "$colo" slurm conf --node "$host" --cpus 16 >"$dir/colo-conf.txt"
  else
    "$colo" slurm conf --node "$host" --gpus 2 --gpu-mem "$gpu_mem" --device-files "$dir/dev/nvidia%d" --cpus 16 \
      >"$dir/colo-conf.txt"
  fi
  sed -n '/^# gres.conf/,/^# slurm.conf/p' "$dir/colo-conf.txt" | grep -v '^#' >"$dir/gres.conf"
  cat >"$dir/slurm.conf" <<CONF
ClusterName=colotest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
JobRequeue=1
ReturnToService=2
MinJobAge=3600
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmdParameters=config_overrides
CONF
  [ -n "${COLO_SLURM_PLUGIN_DIR:-}" ] && echo "PluginDir=$COLO_SLURM_PLUGIN_DIR" >>"$dir/slurm.conf"
  # A machine with cgroup v2 and no systemd (a container): slurmd's cgroup
  # plugin must not ask systemd for a scope.
  if [ -n "${COLO_SLURM_CGROUP:-}" ]; then
    printf 'CgroupPlugin=%s\nIgnoreSystemd=yes\n' "$COLO_SLURM_CGROUP" >"$dir/cgroup.conf"
  fi
  # colo's lines: GRES types, the selector, the node with its gpu and shard counts.
  sed -n '/^# slurm.conf/,/^# colo/p' "$dir/colo-conf.txt" | grep -v '^#' >>"$dir/slurm.conf"
  echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$dir/slurm.conf"
  start_ctld -c -i || skip "slurmctld does not answer"
  SLURM_CONF=$dir/slurm.conf daemon slurmd -N "$host" || skip "slurmd does not start"
  wait_for 20 sh -c "SLURM_CONF=$dir/slurm.conf sinfo -h -o %T | grep -q idle" \
    || { tail -5 "$dir/log/slurmd.log" "$dir/log/slurmctld.log" >&2; skip "the node never became idle"; }
  echo "export SLURM_CONF=$dir/slurm.conf"
  ;;
restart-ctld)
  kill "$(cat "$dir/slurmctld.pid")"
  wait_for 20 sh -c "! kill -0 $(cat "$dir/slurmctld.pid") 2>/dev/null"
  start_ctld
  # Until slurmd has registered again, slurmctld refuses GRES requests.
  wait_for 30 sh -c "SLURM_CONF=$dir/slurm.conf sinfo -h -o %T | grep -q -E 'idle|mixed|allocated'"
  ;;
stop)
  pids=()
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/pid"; do
    [ -f "$pidfile" ] && pids+=("$(cat "$pidfile")") && kill "${pids[-1]}" 2>/dev/null
  done
  for pid in "${pids[@]}"; do wait_for 10 sh -c "! kill -0 $pid 2>/dev/null" || kill -9 "$pid" 2>/dev/null; done
  true
  ;;
esac
