"""Summarises runs of the real trace (run_trace.sh) into the scheduler's
summary.json: speedup, energy and mean JCT of each collocated run against
exclusive, jobs per GPU, SM activity, per-job slowdown, losses.

An exclusive run cut off by the device's time limit can be completed by a
second run of the jobs it had not finished (make_jobs.py --from-job K): give
--exclusive-rest and --cut-job K. Exclusive runs one job at a time, so the
whole is the first run up to the end of job K-1 (read from the GPU memory
timeline, whose records were not written) followed by the second run.

    python3 bench/sched/real/summarise.py --exclusive DIR [--exclusive-rest DIR --cut-job K] \
        --collocated TAG=DIR ... --out summary.json
"""
import argparse
import csv
import json
import os
import statistics


def timeline(directory):
    name = next(f for f in os.listdir(directory) if f.startswith("timeline_") and f != "timeline_gpus.csv")
    return list(csv.DictReader(open(os.path.join(directory, name))))


def energy_until(rows, seconds):
    rows = [r for r in rows if r["energy_j"]]
    t0, e0 = float(rows[0]["unix_s"]), float(rows[0]["energy_j"])
    for r in rows:
        if float(r["unix_s"]) - t0 >= seconds:
            return float(r["energy_j"]) - e0
    return float(rows[-1]["energy_j"]) - e0


def busy_segment_ends(rows, threshold_mib=800):
    """Ends (s from the timeline's start) of the stretches with a job's memory on the GPU."""
    t0, ends, busy = float(rows[0]["unix_s"]), [], False
    for r in rows:
        t, used = float(r["unix_s"]) - t0, int(r["mem_used_bytes"]) / 2**20
        if busy and used <= threshold_mib:
            ends.append(t)
        busy = used > threshold_mib
    return ends


def records(directory):
    path = next(os.path.join(directory, f) for f in os.listdir(directory) if f.startswith("jobs_"))
    return [json.loads(line) for line in open(path)]


def mean_sm(rows):
    values = [float(r["sm_active"]) for r in rows if r["sm_active"]]
    return statistics.mean(values) if values else None


def max_jobs_per_gpu(jobs):
    events = sorted([(j["start_s"], 1) for j in jobs] + [(j["end_s"], -1) for j in jobs], key=lambda e: (e[0], e[1]))
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def exclusive_whole(args):
    """(total_s, energy_j, {job name: (end_s, exec_s)}) of the exclusive baseline."""
    rows = timeline(args.exclusive)
    if not args.exclusive_rest:
        jobs = records(args.exclusive)
        run = json.load(open(os.path.join(args.exclusive, "run.json")))
        monitor = json.load(open(os.path.join(args.exclusive, "monitor.json")))["devices"][0]
        return run["total_s"], monitor["energy_j"], {j["name"]: (j["end_s"], j["end_s"] - j["start_s"]) for j in jobs}
    ends = busy_segment_ends(rows)[: args.cut_job - 1]
    cut = ends[-1]
    names = [j["name"] for j in expand(os.path.join(args.exclusive, "jobs.toml"))]
    out, previous = {}, 0.0
    for name, end in zip(names, ends):
        out[name] = (end, end - previous)
        previous = end
    rest = records(args.exclusive_rest)
    run = json.load(open(os.path.join(args.exclusive_rest, "run.json")))
    monitor = json.load(open(os.path.join(args.exclusive_rest, "monitor.json")))["devices"][0]
    for j in rest:
        out[j["name"]] = (cut + j["end_s"], j["end_s"] - j["start_s"])
    return cut + run["total_s"], energy_until(rows, cut) + monitor["energy_j"], out


def expand(jobs_toml):
    """Job names in submission order, arrays expanded as colo names them."""
    import tomllib

    jobs = []
    for job in tomllib.load(open(jobs_toml, "rb"))["job"]:
        if "array" in job:
            first, last = (int(x) for x in job["array"].split("-"))
            jobs += [{"name": f"{job['name']}[{i}]"} for i in range(first, last + 1)]
        else:
            jobs.append({"name": job["name"]})
    return jobs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exclusive", required=True)
    p.add_argument("--exclusive-rest")
    p.add_argument("--cut-job", type=int, default=0)
    p.add_argument("--collocated", action="append", default=[], help="TAG=DIR")
    p.add_argument("--main", help="the TAG whose figures go at the top level (default: the fastest)")
    p.add_argument("--commands", default="", help="the commands that produced the runs")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    ex_total, ex_energy, ex_jobs = exclusive_whole(args)
    ex_jct = statistics.mean(end for end, _ in ex_jobs.values())
    runs = {}
    for item in args.collocated:
        tag, directory = item.split("=", 1)
        jobs = records(directory)
        run = json.load(open(os.path.join(directory, "run.json")))
        energy = json.load(open(os.path.join(directory, "monitor.json")))["devices"][0]["energy_j"]
        slowdown = {j["name"]: (j["end_s"] - j["start_s"]) / ex_jobs[j["name"]][1] for j in jobs if j["name"] in ex_jobs}
        runs[tag] = {
            "policy": run["policy"], "mode": run["mode"], "total_s": run["total_s"], "energy_j": energy,
            "speedup_vs_exclusive": ex_total / run["total_s"], "energy_saved_pct": 100 * (1 - energy / ex_energy),
            "mean_jct_s": run["mean_jct_s"], "mean_jct_ratio": run["mean_jct_s"] / ex_jct,
            "max_jobs_per_gpu": max_jobs_per_gpu(jobs), "mean_sm_activity": mean_sm(timeline(directory)),
            "jobs_lost": run["jobs_lost"], "oom_events": run["oom_events"],
            # Every job of this trace fits the GPU: any OOM death is a job killed by its MPS limit.
            "false_ooms": run["oom_events"],
            "slowdown_mean": statistics.mean(slowdown.values()), "slowdown_max": max(slowdown.values()),
            "slowdown_per_job": {k: round(v, 3) for k, v in sorted(slowdown.items())},
        }
    main_tag = args.main or min(runs, key=lambda t: runs[t]["total_s"])
    best = runs[main_tag]
    summary = {
        "trace": "bench/sched/real/make_jobs.py: 40 work-bound jobs, no sm_share declared",
        "gpu": "NVIDIA H100 80GB HBM3",
        "declared_sm_share": False,
        "exclusive": {"total_s": ex_total, "energy_j": ex_energy, "mean_jct_s": ex_jct,
                      "composite": bool(args.exclusive_rest), "cut_job": args.cut_job or None,
                      "mean_sm_activity": mean_sm(timeline(args.exclusive))},
        "best": main_tag,
        "speedup_vs_exclusive": best["speedup_vs_exclusive"],
        "energy_saved_pct": best["energy_saved_pct"],
        "mean_jct_ratio": best["mean_jct_ratio"],
        "max_jobs_per_gpu": best["max_jobs_per_gpu"],
        "mean_sm_activity": best["mean_sm_activity"],
        "jobs_lost": sum(r["jobs_lost"] for r in runs.values()),
        "false_ooms": sum(r["false_ooms"] for r in runs.values()),
        "runs": runs,
        # Filled by summarise_multi_gpu.py from the two-GPU run; kept when this file is rewritten.
        "multi_gpu": None,
        "commands": args.commands,
    }
    if os.path.exists(args.out):
        summary["multi_gpu"] = json.load(open(args.out)).get("multi_gpu")
    json.dump(summary, open(args.out, "w"), indent=1)
    for key in ("speedup_vs_exclusive", "energy_saved_pct", "mean_jct_ratio", "max_jobs_per_gpu", "mean_sm_activity",
                "jobs_lost", "false_ooms"):
        print(f"{key}: {summary[key]}")


if __name__ == "__main__":
    main()
