#!/usr/bin/env bash
# A real one-host Slurm cluster in a private directory, for colo's tests:
# what `colo slurm conf --standalone DIR` writes (munged, slurmctld and
# slurmd on free loopback ports, two GPUs declared to Slurm by stand-in
# device files that are no GPUs, each cut into 1 GiB shards), started by
# the commands it prints.
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

start_ctld() {
  SLURM_CONF=$dir/slurm.conf daemon slurmctld "$@"
  wait_for 20 env SLURM_CONF="$dir/slurm.conf" scontrol ping || { tail -20 "$dir/log/slurmctld.log" >&2; return 1; }
}

case $action in
start)
  colo=$3 gpu_mem=${4:-80GiB}
  [ "$(id -u)" = 0 ] || skip "not root (slurmd starts jobs as their user)"
  for p in munged slurmctld slurmd sbatch squeue scontrol sinfo; do
    command -v "$p" >/dev/null || skip "$p missing (Debian slurmctld slurmd slurm-client munge)"
  done
  rm -rf "$dir"
  host=$(hostname)
  gpus=()  # COLO_SLURM_GPUS=real: the GPUs NVML sees, by their device files
  if [ "${COLO_SLURM_GPUS:-}" != real ]; then
    # No such device files: colo links stand-ins for them to /dev/null.
    gpus=(--gpus 2 --gpu-mem "$gpu_mem" --device-files "$dir/dev/nvidia%d")
  fi
  # The whole set-up, as a user makes it (docs/slurm.md); its lines that
  # are not comments are the commands that start it.
  conf=$("$colo" slurm conf --standalone "$dir" --node "$host" --cpus 16 "${gpus[@]}") \
    || { echo "slurm_cluster: colo slurm conf --standalone failed" >&2; exit 1; }
  printf '%s\n' "$conf" >"$dir/colo-conf.txt"
  mapfile -t start_commands < <(grep -v '^#' <<<"$conf")
  [ -n "${COLO_SLURM_PLUGIN_DIR:-}" ] && echo "PluginDir=$COLO_SLURM_PLUGIN_DIR" >>"$dir/slurm.conf"
  # A machine with cgroup v2 and no systemd (a container): slurmd's cgroup
  # plugin must not ask systemd for a scope.
  if [ -n "${COLO_SLURM_CGROUP:-}" ]; then
    printf 'CgroupPlugin=%s\nIgnoreSystemd=yes\n' "$COLO_SLURM_CGROUP" >"$dir/cgroup.conf"
  fi
  daemon sh -c "${start_commands[0]}" || skip "munged does not start"
  daemon sh -c "${start_commands[1]}" || skip "slurmctld or slurmd does not start"
  wait_for 20 env SLURM_CONF="$dir/slurm.conf" scontrol ping \
    || { tail -20 "$dir/log/slurmctld.log" >&2; skip "slurmctld does not answer"; }
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
