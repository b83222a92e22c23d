#!/usr/bin/env bash
# GPU-machine check of the scheduler core driving real processes: three
# PyTorch jobs that declare neither memory nor SM share (bench/sched/
# torch_job.py at three matrix sizes, reporting their steps as progress)
# are started by `colo run` under MPS. Each must start beside the others
# with a provisional reservation, have its peak measured and its share
# settled, and complete. Each job first runs alone for 12 s under `colo
# monitor`: its settled share is compared with its SM activity alone.
# Writes $OUT/settle_check.json (the store's rows, the shares against
# alone, colo's log) and prints one line.
#
#   bench/sched/settle_check.sh BUILD OUT
set -uo pipefail
COLO=$PWD/${1:?usage: settle_check.sh BUILD OUT}/colo
OUT=${2:?usage: settle_check.sh BUILD OUT}
work=$(mktemp -d)
here=$(cd "$(dirname "$0")" && pwd)
sizes="1024 4096 8192"
for size in $sizes; do
  "$COLO" monitor --interval 0.5 --out "$work/alone_$size.csv" -- \
    python3 "$here/torch_job.py" --seconds 12 --hold-gib 2 --size "$size" >/dev/null 2>&1
done
for size in $sizes; do
  cat <<TOML
[[job]]
name = "matmul-$size"
command = ["python3", "$here/torch_job.py", "--seconds", "25", "--hold-gib", "2", "--size", "$size"]
env = { PYTHONPATH = "$(dirname "$COLO")/python" }
TOML
done >"$work/jobs.toml"
start=$(date +%s.%N)
timeout 300 "$COLO" run "$work/jobs.toml" --store "$work/jobs.db" --policy magm --mode mps --poll 0.5 \
  >"$work/run.txt" 2>&1
code=$?
python3 - "$work" "$code" "$start" "$OUT" "$here" <<'PY'
import csv, json, statistics, subprocess, sys
work, code, start, out, here = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
rows = json.loads(subprocess.check_output([sys.executable, f"{here}/user_trace/store.py", "rows", f"{work}/jobs.db"]))
log = open(f"{work}/run.txt").read()


def alone(name):
    """Mean SM activity of the job's solo run, its first 4 s and last 1 s left out."""
    size = name.split("-")[-1]
    samples = [(float(r["unix_s"]), float(r["sm_active"])) for r in csv.DictReader(open(f"{work}/alone_{size}.csv"))
               if r.get("sm_active") not in (None, "")]
    if not samples:
        return None
    t0, t1 = samples[0][0], samples[-1][0]
    inside = [a for t, a in samples if t0 + 4 <= t <= t1 - 1]
    return round(statistics.mean(inside), 3) if inside else None


jobs = [{k: r.get(k) for k in ("name", "state", "start_s", "end_s", "sm_share", "peak_mem_bytes", "attempts")} for r in rows]
for j in jobs:
    j["sm_alone"] = alone(j["name"])
    j["gap"] = round(abs(j["sm_share"] - j["sm_alone"]), 3) if j["sm_share"] is not None and j["sm_alone"] is not None else None
gaps = [j["gap"] for j in jobs if j["gap"] is not None]
starts = [r["start_s"] for r in rows if r.get("start_s")]
result = {
    "command": "bench/gpu/run.sh settle   (runs bench/sched/settle_check.sh)",
    "exit": code, "jobs": jobs, "log": log,
    "completed": sum(r["state"] == "COMPLETED" for r in rows),
    "settled": sum(r.get("sm_share") is not None for r in rows),
    "provisional_starts": log.count("memory unknown: reserves"),
    "start_spread_s": round(max(starts) - min(starts), 2) if starts else None,
    "share_gap_median": round(statistics.median(gaps), 3) if gaps else None,
    "first_start_s": round(min(starts) - start, 2) if starts else None,
}
json.dump(result, open(f"{out}/settle_check.json", "w"), indent=1)
print(f"settle check: exit {code}, {result['completed']}/3 completed, {result['settled']} settled, "
      f"{result['provisional_starts']} provisional starts, starts within {result['start_spread_s']} s, "
      f"first {result['first_start_s']} s after colo run")
for j in jobs:
    print(f"  {j['name']}: settled share {j['sm_share']}, SM activity alone {j['sm_alone']}, gap {j['gap']}")
print(f"  median gap {result['share_gap_median']}")
PY
