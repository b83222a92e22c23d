#!/usr/bin/env bash
# GPU-machine check of the scheduler core driving real processes: three
# PyTorch jobs that declare neither memory nor SM share (bench/sched/
# torch_job.py at three matrix sizes) are started by `colo run` under MPS.
# Each must start beside the others with a provisional reservation, have
# its peak measured and its share settled, and complete. Writes
# $OUT/settle_check.json (the store's rows and colo's log) and prints one line.
#
#   bench/sched/settle_check.sh BUILD OUT
set -uo pipefail
COLO=$PWD/${1:?usage: settle_check.sh BUILD OUT}/colo
OUT=${2:?usage: settle_check.sh BUILD OUT}
work=$(mktemp -d)
here=$(cd "$(dirname "$0")" && pwd)
for size in 1024 4096 8192; do
  cat <<TOML
[[job]]
name = "matmul-$size"
command = ["python3", "$here/torch_job.py", "--seconds", "25", "--hold-gib", "2", "--size", "$size"]
TOML
done >"$work/jobs.toml"
start=$(date +%s.%N)
timeout 300 "$COLO" run "$work/jobs.toml" --store "$work/jobs.db" --policy magm --mode mps --poll 0.5 \
  >"$work/run.txt" 2>&1
code=$?
python3 - "$work" "$code" "$start" "$OUT" "$here" <<'PY'
import json, subprocess, sys
work, code, start, out, here = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = json.loads(subprocess.check_output([sys.executable, f"{here}/user_trace/store.py", "rows", f"{work}/jobs.db"]))
log = open(f"{work}/run.txt").read()
jobs = [{k: r.get(k) for k in ("name", "state", "start_s", "end_s", "sm_share", "peak_mem_bytes", "attempts")} for r in rows]
starts = [r["start_s"] for r in rows if r.get("start_s")]
result = {
    "command": "bench/gpu/run.sh settle   (runs bench/sched/settle_check.sh)",
    "exit": code, "jobs": jobs, "log": log,
    "completed": sum(r["state"] == "COMPLETED" for r in rows),
    "settled": sum(r.get("sm_share") is not None for r in rows),
    "provisional_starts": log.count("memory unknown: reserves"),
    "start_spread_s": round(max(starts) - min(starts), 2) if starts else None,
    "first_start_s": round(min(starts) - start, 2) if starts else None,
}
json.dump(result, open(f"{out}/settle_check.json", "w"), indent=1)
print(f"settle check: exit {code}, {result['completed']}/3 completed, {result['settled']} settled, "
      f"{result['provisional_starts']} provisional starts, starts within {result['start_spread_s']} s, "
      f"first {result['first_start_s']} s after colo run")
PY
