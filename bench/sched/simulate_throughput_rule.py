"""The 1,000-job trace on 8 simulated GPUs with the throughput rule and
without it, SM shares declared and undeclared: runs `colo simulate` four
times and writes the comparison as JSON.

    python3 bench/sched/simulate_throughput_rule.py BUILD/colo TRACE.csv OUT.json
"""
import json
import subprocess
import sys
import tempfile

POLICIES = "exclusive,magm,best-fit,round-robin,lug"
CONFIGS = {
    "declared, throughput rule": [],
    "declared, no throughput rule": ["--no-throughput-rule"],
    "undeclared, throughput rule": ["--undeclared-sm-share"],
    "undeclared, no throughput rule": ["--no-throughput-rule", "--undeclared-sm-share"],
}


def simulate(colo, trace, flags):
    """{policy: figures} of one `colo simulate` run over every policy."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([colo, "simulate", trace, "--gpus", "8", "--policy", POLICIES, *flags, "--out", out],
                       check=True, capture_output=True)
        runs = json.load(open(f"{out}/summary.json"))
    exclusive = next(r for r in runs if r["policy"] == "exclusive")
    return {r["policy"]: {
        "total_h": round(r["total_s"] / 3600, 3),
        "speedup_vs_exclusive": round(exclusive["total_s"] / r["total_s"], 4),
        "energy_saved_pct": round(100 * (1 - r["energy_j"] / exclusive["energy_j"]), 2),
        "mean_jct_min": round(r["mean_jct_s"] / 60, 1),
        "oom_events": r["oom_events"],
        "jobs_lost": r["jobs_lost"],
        "gpus_closed_by_throughput_rule": r.get("gpus_closed_by_throughput_rule", 0),
    } for r in runs}


def main():
    colo, trace, out = sys.argv[1:4]
    runs = {name: simulate(colo, trace, flags) for name, flags in CONFIGS.items()}
    ratio = lambda kind: round(runs[f"{kind}, no throughput rule"]["magm"]["total_h"]
                               / runs[f"{kind}, throughput rule"]["magm"]["total_h"], 4)
    result = {
        "command": f"python3 bench/sched/simulate_throughput_rule.py build/colo {trace} {out}",
        "what": "The 1,000-job trace on 8 simulated 80 GiB GPUs under the runner's rules (the one scheduler core), "
                "with the throughput rule (a GPU whose jobs' summed throughput, each as a fraction of alone, grew by "
                "less than 5% with a newcomer takes no further job until one leaves; every watched join is judged "
                "2 s after it, at an event of its own; a job's figure alone is known once a job of its workload "
                "completed) and without it, with SM shares declared and undeclared.",
        "runs": runs,
        "magm_with_rule_over_without_declared": ratio("declared"),
        "magm_with_rule_over_without_undeclared": ratio("undeclared"),
    }
    json.dump(result, open(out, "w"), indent=1)
    for name, by_policy in runs.items():
        m = by_policy["magm"]
        print(f"{name}: magm {m['total_h']} h, {m['speedup_vs_exclusive']}x, "
              f"{m['gpus_closed_by_throughput_rule']} closings")


if __name__ == "__main__":
    main()
