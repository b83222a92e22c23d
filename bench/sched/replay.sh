#!/usr/bin/env bash
# GPU-machine replay of a real trace (bench/sched/make_replay_trace.py) under
# exclusive and under magm and best-fit with MPS (about 6 minutes in all), each inside `colo monitor` so that
# the whole device's energy is counted. Writes $OUT/sched_*.json, the GPU
# timelines (memory, SM activity, power every 0.5 s) and a `colo report`
# directory $OUT/sched_report.tgz (summary.json with the monitor's energy,
# jobs_<policy>_<mode>.jsonl, timeline_<policy>.csv; `colo report DIR`
# draws the Gantt charts, timelines and the policy bars), and prints the
# comparison.
set -uo pipefail
BUILD=$1
OUT=$2
COLO=$PWD/$BUILD/colo
work=$(mktemp -d)
mkdir -p "$work/report"
python3 bench/sched/make_replay_trace.py "$COLO" "$work/trace.csv"
cp "$work/trace.csv" "$OUT/sched_trace.csv"
run() {  # policy mode
  timeout 260 "$COLO" monitor --interval 0.5 --summary-json "$work/monitor_$1.json" \
    --out "$work/report/timeline_$1.csv" -- \
    "$COLO" replay "$work/trace.csv" --policy "$1" --mode "$2" --poll 0.25 --store "$work/$1/jobs.db" \
    --summary-json "$work/replay_$1.json" --out "$work/report_$1" >"$work/replay_$1.txt" 2>&1
  echo "replay $1/$2: exit $?"
  tail -3 "$work/replay_$1.txt"
}
run exclusive exclusive
run magm mps
run best-fit mps
pgrep -fa nvidia-cuda-mps || echo "no MPS process left"
python3 - "$work" <<'PY' | tee "$OUT/sched_lines.txt"
import json, sys
w = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"error": str(e)}
ex = load(f"{w}/replay_exclusive.json")
monitor = {p: load(f"{w}/monitor_{p}.json") for p in ("exclusive", "magm", "best-fit")}
energy = {p: m.get("devices", [{}])[0].get("energy_j", float("nan")) for p, m in monitor.items()}
collocated = {p: load(f"{w}/replay_{p}.json") for p in ("magm", "best-fit")}
best_name = min(collocated, key=lambda p: collocated[p].get("total_s", float("inf")))
bf, e_ex, e_bf = collocated[best_name], energy["exclusive"], energy[best_name]
summary = {
    "command": "bench/gpu/run.sh sched   (runs bench/sched/replay.sh: colo monitor -- colo replay trace.csv --policy P --mode M --out DIR)",
    "gpu": "see gpu.txt", "jobs": ex.get("jobs"),
    "exclusive_total_s": ex.get("total_s"), "best_policy": best_name + "/mps", "best_total_s": bf.get("total_s"),
    "speedup_vs_exclusive": ex.get("total_s", 0) / bf["total_s"] if bf.get("total_s") else None,
    "exclusive_energy_j": e_ex, "best_energy_j": e_bf,
    "energy_reduction_vs_exclusive": 1 - e_bf / e_ex if e_ex == e_ex and e_ex else None,
    "jobs_lost": sum((r.get("jobs_lost", 0) or 0) for r in [ex, *collocated.values()]),
    "oom_events": bf.get("oom_events"), "oom_unrecovered": bf.get("oom_unrecovered"),
    "exclusive": ex, "best": bf,
    "collocated": {p: dict(r, energy_j_counter=energy[p]) for p, r in collocated.items()},
}
json.dump(summary, open(f"{w}/sched_summary.json", "w"), indent=1)
# One `colo report` directory for both runs, energy from the device counter.
runs = []
for policy in ("exclusive", "magm", "best-fit"):
    try:
        run = json.load(open(f"{w}/report_{policy}/summary.json"))[0]
    except Exception:
        continue
    run["energy_j"] = energy[policy]
    runs.append(run)
json.dump(runs, open(f"{w}/report/summary.json", "w"), indent=1)
for k in ["jobs", "exclusive_total_s", "best_total_s", "speedup_vs_exclusive", "exclusive_energy_j", "best_energy_j",
          "energy_reduction_vs_exclusive", "jobs_lost", "oom_events", "oom_unrecovered"]:
    print(f"sched {k}: {summary[k]}")
PY
cp "$work/sched_summary.json" "$OUT/sched_summary.json"
cp "$work"/report_*/jobs_*.jsonl "$work/report/" 2>/dev/null
"$COLO" report "$work/report" | tail -8
tar -C "$work/report" -czf "$OUT/sched_report.tgz" .
tar -C "$work" --exclude='*.db*' -czf "$OUT/sched_raw.tgz" . 2>/dev/null
