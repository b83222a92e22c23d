"""Does `colo compare` agree with colo's steady-state fusion benchmark where
the two measure the same thing? (issue 24: within 10%.)

`bench/fusion/run.sh` with PROCESS_MODE=fused1 runs each process as `colo
compare`'s process levels run it (a one-model fused array, `colo sweep
--only I --max-array 1`), so for the sweep workloads:

    compare level   fusion benchmark row (same model, same N)
    sequential      sequential  (one process's steady state)
    timeslice       concurrent  (N processes at once)
    mps             mps         (N processes under MPS, each 100/N % of the SMs)
    fused           fused (lenet) / fused_cl (resnet18: sweeps store resnets NHWC)

    python3 bench/compare/agreement.py --fusion RAW.jsonl \\
        --compare lenet16=DIR/summary.json:lenet:16 \\
        --compare resnet18x8=DIR/summary.json:resnet18:8 --out agreement.json

A Python workload that sweeps a model through colo.fuse is checked against
bench/fusion/user_models.py's row of the same model and array (fused level
only: its process levels run one-model colo.fuse arrays, which that
benchmark does not measure). Its MODEL is `user:CASE:MODE`, e.g.
`--user-models ROWS.jsonl --compare tv=DIR/summary.json:user:resnet18:colo_nhwc:8`.
"""
import argparse
import json
import sys

TOLERANCE = 0.10
FUSION_ROW = {"sequential": "sequential", "timeslice": "concurrent", "mps": "mps"}


def fusion_rows(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return [r for r in rows if "samples_per_s" in r]


def bench_figure(rows, level, model, n):
    """The fusion benchmark's samples/s for `level` of `n` `model`s, or None."""
    if level == "fused":
        strategy = "fused_cl" if model == "resnet18" else "fused"
        wanted = n
    elif level in FUSION_ROW:
        strategy = FUSION_ROW[level]
        wanted = 1 if level == "sequential" else n
    else:
        return None
    for r in rows:
        if r["strategy"] != strategy or r["model"] != model or r["models"] != wanted:
            continue
        if strategy in FUSION_ROW.values() and r.get("process_mode") != "fused1":
            continue
        if strategy == "mps" and r.get("mps_percentage") != max(1, 100 // n):
            continue
        return r["samples_per_s"]
    return None


def user_models_figure(rows, level, case, mode, n):
    """user_models.py's fp32 samples/s of `n` `case`s in `mode`, for the fused level; else None."""
    if level != "fused":
        return None
    for r in rows:
        if (r.get("case"), r.get("mode"), r.get("models"), r.get("precision", "fp32")) == (case, mode, n, "fp32"):
            return r["samples_per_s"]
    return None


def compare_workload(rows, summary_path, model, n, user_rows=()):
    summary = json.load(open(summary_path))
    out = {"basis": summary.get("basis"), "levels": {}}
    for lv in summary["levels"]:
        if "samples_per_s" not in lv:
            continue
        if model.startswith("user:"):
            _, case, mode = model.split(":")
            bench = user_models_figure(user_rows, lv["level"], case, mode, n)
        else:
            bench = bench_figure(rows, lv["level"], model, n)
        if bench is None:
            continue
        ratio = lv["samples_per_s"] / bench
        out["levels"][lv["level"]] = {"compare_samples_per_s": lv["samples_per_s"],
                                      "benchmark_samples_per_s": bench, "ratio": ratio,
                                      "within_10pct": abs(ratio - 1) <= TOLERANCE}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fusion", help="bench/fusion/run.sh's raw.jsonl (PROCESS_MODE=fused1)")
    p.add_argument("--user-models", help="bench/fusion/user_models.py's rows.jsonl, for MODEL user:CASE:MODE")
    p.add_argument("--compare", action="append", required=True, help="NAME=SUMMARY.json:MODEL:N")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows = fusion_rows(args.fusion) if args.fusion else []
    user_rows = fusion_rows(args.user_models) if args.user_models else []
    result = {"tolerance": TOLERANCE, "workloads": {}, "command": " ".join(["python3"] + sys.argv)}
    for entry in args.compare:
        name, rest = entry.split("=", 1)
        path, spec = rest.split(".json:", 1)
        model, n = spec.rsplit(":", 1)
        path += ".json"
        result["workloads"][name] = compare_workload(rows, path, model, int(n), user_rows)
    checked = [lv for w in result["workloads"].values() for lv in w["levels"].values()]
    result["levels_checked"] = len(checked)
    result["levels_within_10pct"] = sum(lv["within_10pct"] for lv in checked)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    for name, w in result["workloads"].items():
        for level, lv in w["levels"].items():
            print(f"agreement {name:>10} {level:>10}: compare {lv['compare_samples_per_s']:>10,.0f}  "
                  f"benchmark {lv['benchmark_samples_per_s']:>10,.0f}  ratio {lv['ratio']:.3f}"
                  f"{'' if lv['within_10pct'] else '  (outside 10%)'}")
    print(f"agreement: {result['levels_within_10pct']} of {result['levels_checked']} levels within 10%")


if __name__ == "__main__":
    main()
