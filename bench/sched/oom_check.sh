#!/usr/bin/env bash
# GPU-machine check of OOM recovery: two jobs hold 24 GiB each; a third
# declares 2 GiB but takes 40 GiB and is submitted while they run, so it dies
# of a real PyTorch out-of-memory error, is classified OUT_OF_MEMORY, and is
# retried alone (RAD-RM's rule) once the GPU is free. Writes $OUT/oom_check.json.
set -uo pipefail
COLO=$PWD/$1/colo
OUT=$2
work=$(mktemp -d)
GiB=1073741824
{
  echo "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,command"
  echo "0,big-0,10,0,0.3,$((25 * GiB)),0,python3 bench/sched/torch_job.py --seconds 12 --hold-gib 24"
  echo "0,big-1,10,0,0.3,$((25 * GiB)),0,python3 bench/sched/torch_job.py --seconds 12 --hold-gib 24"
  echo "4,liar,10,0,0.3,$((2 * GiB)),0,python3 bench/sched/torch_job.py --seconds 5 --hold-gib 40"
} >"$work/trace.csv"
timeout 200 "$COLO" replay "$work/trace.csv" --policy best-fit --mode mps --poll 0.25 --store "$work/s/jobs.db" \
  --summary-json "$work/replay.json" >"$work/replay.txt" 2>&1
echo "oom check: exit $?"
grep -h -E "OutOfMemoryError|out of memory" "$work"/s/jobs.db.logs/job-3.log | head -2
python3 - "$work" <<'PY' | tee -a "$OUT/oom_lines.txt"
import json, sys
w = sys.argv[1]
r = json.load(open(f"{w}/replay.json"))
out = {"command": "bench/gpu/run.sh oom   (runs bench/sched/oom_check.sh)", "replay": r,
       "oom_events": r["oom_events"], "oom_unrecovered": r["oom_unrecovered"], "jobs_lost": r["jobs_lost"],
       "log": open(f"{w}/replay.txt").read()}
json.dump(out, open(f"{w}/oom_check.json", "w"), indent=1)
print(f"oom check: oom_events {r['oom_events']}, unrecovered {r['oom_unrecovered']}, completed {r['completed']}, lost {r['jobs_lost']}")
PY
cp "$work/oom_check.json" "$OUT/oom_check.json"
