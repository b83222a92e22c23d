"""Makes a finished on_gpus.sh run (its OUT folder, tarred back from the GPU
host and unpacked) the committed results of bench/results/sched/user_trace:
copies the files the results README lists, adds to the run's summary.json
the figures worked out from them (pauses, slowdown medians, the ceiling of
perfect packing, the simulator's job completion and concurrency beside the
run's, the targets), keeps (c)'s figures from the committed summary when
this run did not run it, re-simulates shares_once_training.json on the new
trace with this machine's colo, and prints the README's per-job table.

    python3 bench/sched/user_trace/adopt_run.py RUN --commit "SHA (what it has)" \
        --device-command "the calls, kind, carry" [--colo build/colo]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from summarise import most_at_once, read_json, read_jsonl  # noqa: E402  (beside this file)
RESULTS = os.path.normpath(os.path.join(HERE, "..", "..", "results", "sched", "user_trace"))
KEPT = ("how", "sim_note", "target_speedup_model")  # written by hand; the run does not change them
DECLARED_KEYS = ("declared_s", "speedup_declared", "energy_saved_declared_pct", "declared_from")


def copy_files(run):
    """Copies the run's files to their committed names; exits naming one that is missing."""
    parts = {p: sorted(f for f in os.listdir(os.path.join(run, "loop")) if f.startswith(f"timeline_part{p}of2_"))
             for p in (1, 2)}
    plan = [("loop/jobs.jsonl", "loop/jobs.jsonl"), ("loop/peaks.json", "loop/peaks.json"),
            ("trace/jobs.json", "jobs.json"),
            ("sim/summary.json", "sim/summary.json"), ("sim/trace.csv", "sim/trace.csv"),
            ("sim/trace_opaque.csv", "sim/trace_opaque.csv"), ("sim/opaque/summary.json", "sim/opaque/summary.json")]
    plan += [(f"loop/{parts[p][-1]}", f"loop/timeline_loop_jobs_{'1_3_5' if p == 1 else '2_4_6'}.csv")
             for p in (1, 2) if parts[p]]
    for v in ("model", "opaque"):
        plan += [(f"{v}/run_0.json", f"{v}/colo_run_summary.json"), (f"{v}/timeline_0.csv", f"{v}/timeline.csv")]
    read_here = ["model/run_0.txt", "opaque/run_0.txt", "sim/jobs_magm_mps.jsonl", "sim/opaque/jobs_magm_mps.jsonl"]
    for src in [s for s, _ in plan] + read_here:
        if not os.path.exists(os.path.join(run, src)):
            sys.exit(f"adopt_run.py: {os.path.join(run, src)} is missing: is RUN a finished on_gpus.sh OUT?")
    for src, dst in plan:
        os.makedirs(os.path.dirname(os.path.join(RESULTS, dst)), exist_ok=True)
        shutil.copyfile(os.path.join(run, src), os.path.join(RESULTS, dst))
    with open(os.path.join(RESULTS, "settlements.txt"), "w") as out:
        out.write("# settled: lines of colo run's log, (a) [job.model] then (b) nothing declared\n")
        for tag, v in (("(a)", "model"), ("(b)", "opaque")):
            out.write(f"## {tag} {v}\n")
            with open(os.path.join(run, v, "run_0.txt")) as log:
                out.writelines(line for line in log if "settled" in line)


def derived(run, summary, committed):
    """The figures the results README quotes beyond summarise.py's keys."""
    out = {}
    runs = {v: read_json(os.path.join(run, v, "run_0.json")) for v in ("model", "opaque")}
    out["pauses"] = {v: {"pauses": r.get("pauses"), "paused_job_s": round(r.get("paused_job_s") or 0, 1)}
                     for v, r in runs.items()}
    # Jobs of known share that joined past the SM ceiling (colo run since c2dc02a; absent before).
    out["judged"] = {v: {"joins": r.get("judged_joins"), "closings": r.get("judged_closings")} for v, r in runs.items()}
    for v in ("model", "opaque"):
        slow = [j[f"{v}_slowdown"] for j in summary["per_job"] if j.get(f"{v}_slowdown")]
        out[f"slowdown_median_{v}"] = round(statistics.median(slow), 3) if slow else None
        energy = summary["variants"][v]["energy_j"]
        if v == "opaque":
            out["energy_saved_opaque_pct"] = round(100 * (1 - energy / summary["loop_energy_j"]), 3)
    out["speedup_ceiling_perfect_packing"] = round(1 / summary["loop_sm_active_mean"], 3)
    sims = {"model": os.path.join(run, "sim"), "opaque": os.path.join(run, "sim", "opaque")}
    out["sim_mean_jct_s"] = {v: round(read_json(os.path.join(d, "summary.json"))[0]["mean_jct_s"], 1)
                             for v, d in sims.items()}
    out["sim_mean_jct_s"].update({f"real_{v}": round(r["mean_jct_s"], 1) for v, r in runs.items()})
    out["sim_most_jobs_at_once"] = {v: most_at_once(read_jsonl(os.path.join(d, "jobs_magm_mps.jsonl")))
                                    for v, d in sims.items()}
    out["sim_most_jobs_at_once"].update({f"real_{v}": summary["variants"][v]["most_jobs_at_once"]
                                         for v in runs})
    if summary.get("declared_s") is None and committed.get("declared_s") is not None:
        out.update({k: committed.get(k) for k in DECLARED_KEYS})
        earlier = {j["name"]: j for j in committed["per_job"]}
        for j in summary["per_job"]:
            for k in ("declared_state", "declared_slowdown", "declared_sm_share"):
                j[k] = earlier.get(j["name"], {}).get(k)
    merged = dict(summary, **out)
    out["targets_met"] = {
        "speedup_model>=2.5": (merged["speedup_model"] or 0) >= 2.5,
        "energy_saved_model_pct>=30": (merged["energy_saved_model_pct"] or 0) >= 30,
        "speedup_opaque>=2.0": (merged["speedup_opaque"] or 0) >= 2.0,
        "speedup_declared>=2.7" + ("" if summary.get("declared_s") else " (an earlier call)"):
            (merged.get("speedup_declared") or 0) >= 2.7,
        "first_start_s_max<=5": merged["first_start_s_max"] is not None and merged["first_start_s_max"] <= 5,
        "jobs_lost==0 and false_ooms==0": merged["jobs_lost"] == 0 and merged["false_ooms"] == 0,
        "share_gap_median<=0.1 (both variants' jobs)": (merged["share_gap_median"] is not None
                                                       and merged["share_gap_median"] <= 0.1),
        "abs(sim_error_pct)<=15": merged["sim_error_pct"] is not None and abs(merged["sim_error_pct"]) <= 15,
    }
    return out


def shares_once_training(colo, loop_s, commit):
    """Re-simulates the committed trace with every share known (from launch, once training) and none known."""
    trace = os.path.join(RESULTS, "sim", "trace.csv")
    rel = os.path.relpath(trace, os.path.join(RESULTS, "..", "..", "..", ".."))
    variants = [("every share known (declared), counted once each job trains (the default)", []),
                ("every share known (declared), counted from launch", ["--shares-from-launch"]),
                ("no share known: each settles, measured alone (as the first run of a trace)",
                 ["--undeclared-sm-share"])]
    runs = []
    for what, flags in variants:
        with tempfile.TemporaryDirectory() as d:
            args = ["--gpus", "1", "--policy", "magm", "--mode", "mps"] + flags
            subprocess.run([colo, "simulate", trace, *args, "--out", d], check=True, stdout=subprocess.DEVNULL)
            s = read_json(os.path.join(d, "summary.json"))[0]
        runs.append({"what": what, "command": " ".join(["build/colo simulate", rel, *args, "--out DIR"]),
                     "total_s": round(s["total_s"], 1), "energy_kj": round(s["energy_j"] / 1000, 1),
                     "mean_jct_s": round(s["mean_jct_s"], 1), "mean_wait_s": round(s["mean_wait_s"], 1)})
    return {"issue": 49,
            "what": "colo simulate of the user trace's jobs on one simulated H200 (sim/trace.csv: each job's run "
                    "time, start-up, peak and SM activity alone as measured in the committed call). With every "
                    "share known, a share that counts from launch holds a GPU through each job's start-up; "
                    "counted once the job trains, others train meanwhile. Simulator only.",
            "loop_s": round(loop_s, 1), "runs": runs, "commit": commit}


def per_job_table(summary):
    def f(x, fmt):
        return "-" if x is None else format(x, fmt)
    lines = ["| job | alone s | start-up s | (a) x | (b) x | (c) x | share (a) | share (b) | SM alone |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for j in summary["per_job"]:
        lines.append(f"| {j['name']} | {f(j['solo_s'], '.1f')} | {f(j.get('startup_s'), '.1f')} | "
                     f"{f(j.get('model_slowdown'), '.2f')} | {f(j.get('opaque_slowdown'), '.2f')} | "
                     f"{f(j.get('declared_slowdown'), '.2f')} | {f(j.get('model_sm_share'), '.2f')} | "
                     f"{f(j.get('opaque_sm_share'), '.2f')} | {f(j.get('solo_sm_activity'), '.2f')} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="the unpacked on_gpus.sh OUT folder (summary.json, loop/, model/, opaque/, sim/)")
    p.add_argument("--commit", required=True, help="the tree the run was built from, and what it has")
    p.add_argument("--device-command", required=True, help="the device calls: commands, kind, carry, date")
    p.add_argument("--colo", default=os.path.join(HERE, "..", "..", "..", "build", "colo"),
                   help="this machine's colo, for shares_once_training.json")
    args = p.parse_args()
    summary_path = os.path.join(args.run, "summary.json")
    if not os.path.exists(summary_path):
        sys.exit(f"adopt_run.py: {summary_path} is missing: the run has not been summarised (on_gpus.sh's end)")
    summary = read_json(summary_path)
    if summary.get("model_s") is None or summary.get("opaque_s") is None:
        sys.exit("adopt_run.py: the run's (a) or (b) did not finish; nothing adopted")
    committed = read_json(os.path.join(RESULTS, "summary.json"))
    copy_files(args.run)
    summary.update(derived(args.run, summary, committed))
    summary.update({k: committed[k] for k in KEPT if k in committed})
    summary["commit"] = args.commit
    summary["device_command"] = args.device_command
    with open(os.path.join(RESULTS, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    with open(os.path.join(RESULTS, "shares_once_training.json"), "w") as f:
        json.dump(shares_once_training(args.colo, summary["loop_s"], args.commit), f, indent=1)
        f.write("\n")
    print(per_job_table(summary))


if __name__ == "__main__":
    main()
