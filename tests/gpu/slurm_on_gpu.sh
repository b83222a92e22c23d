#!/usr/bin/env bash
# colo on a real Slurm with the GPU machine's own GPU (issue 21): Slurm and
# munge carried in .slurm/ (scripts/slurm-carry.sh; this machine has no
# Slurm), the GPU cut into 1 GiB shards by colo slurm conf, PyTorch jobs
# under colo slurm exec and MPS. Prints colo slurm status; writes
# $OUT/slurm_gpu.tgz (status, attempts, logs).
#
#   tests/gpu/slurm_on_gpu.sh BUILD OUT
set -uo pipefail
root=$PWD
colo=$root/$1/colo out=$2
[ -d .slurm/bin ] || { echo "slurm: .slurm missing (scripts/slurm-carry.sh, carried with the call)"; exit 1; }
work=/tmp/colo-slurm-gpu
rm -rf "$work" && mkdir -p "$work/clientlib"
# Slurm's commands need libslurmfull (found at Debian's path, linked below) and
# munge's library; the daemons get every carried library, the jobs none but munge's.
ln -s "$root/.slurm/lib/libmunge.so.2" "$work/clientlib/"
export PATH=$root/.slurm/bin:$PATH LD_LIBRARY_PATH=$work/clientlib
export COLO_SLURM_DAEMON_LIBS=$root/.slurm/lib:$root/.slurm/plugins
# slurmd runs slurmstepd, and the binaries find libslurmfull, at Debian's paths.
[ -e /usr/sbin/slurmstepd ] || ln -s "$root/.slurm/bin/slurmstepd" /usr/sbin/slurmstepd
[ -e /usr/lib/x86_64-linux-gnu/slurm-wlm ] || ln -s "$root/.slurm/plugins" /usr/lib/x86_64-linux-gnu/slurm-wlm
cleanup() {
  bash "$root/tests/slurm/slurm_cluster.sh" stop "$work/cluster"
  for pipe in /tmp/colo-slurm-mps-*/gpu-*/pipe; do
    [ -e "$pipe" ] && echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe nvidia-cuda-mps-control 2>/dev/null
  done
  [ "${made_slice:-0}" = 1 ] && find /sys/fs/cgroup/system.slice -depth -type d -exec rmdir {} \; 2>/dev/null
  true
}
trap cleanup EXIT
cgroup=cgroup/v1
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  cgroup=cgroup/v2
  # Without systemd, slurmd's cgroup/v2 puts slurmstepd's scope under a
  # system.slice it expects to exist (an empty cgroup, removed at the end).
  [ -d /sys/fs/cgroup/system.slice ] || { mkdir /sys/fs/cgroup/system.slice && made_slice=1; }
fi
env_line=$(COLO_SLURM_GPUS=real COLO_SLURM_PLUGIN_DIR=$root/.slurm/plugins COLO_SLURM_CGROUP=$cgroup \
  bash "$root/tests/slurm/slurm_cluster.sh" start "$work/cluster" "$colo") || {
  echo "slurm: cannot start Slurm here (exit $?)"
  for log in "$work/cluster/log/"*.log; do echo "== $log"; tail -n 15 "$log"; done
  SLURM_CONF=$work/cluster/slurm.conf LD_LIBRARY_PATH=$COLO_SLURM_DAEMON_LIBS timeout 20 slurmd -D -v -N "$(hostname)" 2>&1 \
    | tail -n 15
  exit 1; }
eval "$env_line"
sinfo -N -o "%N %T %G"
job="python3 $root/tests/gpu/slurm_gpu_job.py"
cat >"$work/jobs.toml" <<TOML
[[job]]
name = "hold6"
command = "$job --gib 6 --seconds 20"
mem = "10GiB"
array = "0-3"

[[job]]
name = "outgrows"
command = "$job --gib 8.5 --seconds 10"
mem = "8GiB"
TOML
cd "$work"
"$colo" slurm submit jobs.toml --state "$work/state" || exit 1
for _ in $(seq 180); do
  sleep 2
  "$colo" slurm status --state "$work/state" --json "$work/status.json" >"$work/status.txt" 2>&1 || continue
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['jobs_running'] + s['jobs_pending'] == 0 else 1)" \
    "$work/status.json" && break
done
cat "$work/status.txt"
python3 - "$work/state/attempts" <<'PY'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    a = json.load(open(path))
    gib = lambda v: f"{v / 2**30:.2f} GiB" if v else "-"
    energy = f"{a['energy_j']:.0f} J" if a["energy_j"] is not None else "-"
    print(f"{a['slurm_id']:>6} {a['name']:>10} attempt {a['attempt']} {a['state']:>13} mps={a['mps']} gpus={a['gpus']} "
          f"limit {gib(a['mem_bytes'])} peak {gib(a['peak_bytes'])} energy {energy} {a['reason']}")
PY
tar -C "$work" -czf "$out/slurm_gpu.tgz" status.json status.txt state/attempts state/logs jobs.toml cluster/colo-conf.txt
