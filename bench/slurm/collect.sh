#!/usr/bin/env bash
# bench/results/slurm: colo on a real one-host Slurm (tests/slurm/slurm_cluster.sh:
# two 80 GiB GPUs declared to Slurm, no GPU work: packing, recovery and
# bookkeeping only) and colo simulate at cluster scale.
#
#   bench/slurm/collect.sh BUILD OUT [SIM_TRACE_JOBS=100000] [NODES=128] [GPUS_PER_NODE=8]
set -euo pipefail
build=$(cd "$1" && pwd) out=$2 jobs=${3:-100000} nodes=${4:-128} per_node=${5:-8}
colo=$build/colo
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/colo-slurm-bench.XXXXXX)
trap 'bash "$root/tests/slurm/slurm_cluster.sh" stop "$work/cluster"; rm -rf "$work" || true' EXIT

# 1. A real Slurm: 24 jobs of 6-36 GiB (arrays among them), two that die of OOM once.
eval "$(bash "$root/tests/slurm/slurm_cluster.sh" start "$work/cluster" "$colo")"
python3 - "$work/jobs.toml" <<'PY'
import sys
sizes = [36, 30, 24, 20, 16, 12, 10, 8, 6]
lines = []
for i, gib in enumerate(sizes):
    lines += [f'[[job]]', f'name = "train-{gib}g"', f'command = "sleep {3 + i % 4}"', f'mem = "{gib}GiB"', ""]
lines += ['[[job]]', 'name = "sweep-8g"', 'command = "sleep 4"', 'mem = "8GiB"', 'array = "0-12"', ""]
for name in ("oom-once-a", "oom-once-b"):
    lines += ['[[job]]', f'name = "{name}"',
              'command = "if [ \\"$COLO_SLURM_ATTEMPT\\" = 2 ]; then sleep 3; else echo \'torch.OutOfMemoryError: CUDA out of memory\'; exit 1; fi"',
              'mem = "12GiB"', ""]
open(sys.argv[1], "w").write("\n".join(lines))
PY
cd "$work"
start=$(date +%s.%N)
"$colo" slurm submit jobs.toml --state "$work/state" >"$out/submit.txt"
for _ in $(seq 240); do
  "$colo" slurm status --state "$work/state" --json "$out/status.json" >"$out/status.txt" 2>&1 || true
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['jobs_running'] + s['jobs_pending'] == 0 else 1)" \
    "$out/status.json" && break
  sleep 1
done
end=$(date +%s.%N)
echo "real Slurm: $(tail -1 "$out/status.txt") in $(python3 -c "print(round($end - $start, 1))") s"

# 2. Cluster scale: one simulation per policy, each timed on one core.
"$colo" trace generate --jobs "$jobs" --seed 7 --mean-interarrival "$(python3 -c "print(320 / ($nodes * $per_node))")" \
  --out "$work/trace.csv" >/dev/null
for policy in exclusive slurm-shard magm best-fit; do
  "$colo" simulate "$work/trace.csv" --nodes "$nodes" --gpus-per-node "$per_node" --policy "$policy" \
    --out "$work/sim-$policy" | tail -1
  cp "$work/sim-$policy/summary.json" "$out/sim_$policy.json"
done
python3 "$root/bench/slurm/summarise.py" "$out" --jobs "$jobs" --nodes "$nodes" --gpus-per-node "$per_node" \
  --command "bench/slurm/collect.sh $* (on $(nproc) cores, one used per simulation)"
