"""Gathers bench/dist/ps/run.sh's summaries of several calls of one lease
(each `ps-summary.json`) into one summary: every round's time to 90% by
run, the median ratios to all-reduce over all of them, and rank 0's step
and exchange phases of each 200-step ablation run.

    python3 bench/dist/ps/followup_summary.py DIR   # DIR/call-*.json -> DIR/summary.json (keeps its other keys)

Each call's summary is embedded unchanged in DIR/summary.json under
`calls.<name>` (call-<name>.json), so the call files need not be kept:
with no DIR/call-*.json the script gathers from `calls` in DIR/summary.json.
A call file given again replaces its embedded copy.
"""
import glob
import json
import os
import statistics
import sys


def read_calls(folder, embedded=None):
    """The calls' summaries by name: `embedded` (summary.json's `calls`), then
    DIR/call-<name>.json, a file replacing the embedded copy of its name."""
    calls = dict(embedded or {})
    for p in sorted(glob.glob(os.path.join(folder, "call-*.json"))):
        calls[os.path.basename(p)[len("call-"):-len(".json")]] = json.load(open(p))
    return dict(sorted(calls.items()))


def gather(folder, calls=None):
    if calls is None:
        calls = read_calls(folder)
    rounds = {}
    steps = {}
    for name, summary in calls.items():
        for run, figures in summary["runs"].items():
            rank0 = figures["ranks"]["0"]
            if figures["tta_s"] is not None or rank0["steps"] != 200:  # a run to the target (or to its end)
                rounds.setdefault(run, []).extend(summary["tta_s"][run]["values"])
            else:  # an ablation run, stopped at 200 steps
                steps[run] = {"call": name, "step_ms": round(rank0["step_ms"], 2),
                              "compute_ms": round(rank0["compute_ms"], 2),
                              "exchange_phases_ms": {k.replace("_s", ""): round(v, 2)
                                                     for k, v in rank0.get("exchange_phases_ms", {}).items()}}
    reached = {run: [v for v in values if v is not None] for run, values in rounds.items()}
    allreduce = statistics.median(reached["even-allreduce"])
    medians = {run: statistics.median(v) for run, v in reached.items() if v}
    return {
        "tta_s_rounds": {run: [None if v is None else round(v, 2) for v in values] for run, values in rounds.items()},
        "tta_s_median": {run: round(m, 2) for run, m in medians.items()},
        "tta_over_allreduce": {run: round(m / allreduce, 3) for run, m in medians.items()},
        "ablation_rank0": steps,
        "step_over_allreduce": {run: round(s["step_ms"] / steps["even-allreduce"]["step_ms"], 3)
                                for run, s in steps.items()} if "even-allreduce" in steps else {},
    }


def main():
    folder = sys.argv[1]
    path = os.path.join(folder, "summary.json")
    summary = json.load(open(path)) if os.path.exists(path) else {}
    calls = read_calls(folder, summary.get("calls"))
    summary.update(gather(folder, calls))
    summary["calls"] = calls
    json.dump(summary, open(path, "w"), indent=1)
    print(json.dumps({k: summary[k] for k in ("tta_s_median", "tta_over_allreduce", "step_over_allreduce")}))


if __name__ == "__main__":
    main()
