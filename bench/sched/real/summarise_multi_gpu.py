"""Summarises a two-GPU run of the real trace (run_trace.sh ... --two-gpu) into
the `multi_gpu` key of the scheduler's summary.json: makespan, energy, mean
JCT, jobs per GPU, and for each multi-GPU job its GPUs, wait and run time,
whether it was gang-placed, and whether it waited longer than a reservation
allows.

    python3 bench/sched/real/summarise_multi_gpu.py DIR --reserve-after 30 \
        --merge bench/results/sched/real_trace/summary.json

DIR holds run_trace.sh's files: jobs_*.jsonl (colo run's job records),
run.json, monitor.json.

The reservation bound: with --reserve-after R, a job that has waited R
seconds and does not fit stops every job ranked after it (queue_order.h:
priority, submission, id) from starting, so once it is first in line it waits
at most R plus the longest run of a job already running. A job's wait since
submission also counts the time the jobs ranked before it took to start; in
this trace every job is submitted at once and the multi-GPU jobs are ranked
last, so the bound is checked on the wait since the job was first in line
(every job ranked before it had started). `starved_wait_since_submit` applies
the same bound to the whole wait since submission, for comparison.
"""
import argparse
import json
import os
import statistics


def records(directory):
    path = next(os.path.join(directory, f) for f in sorted(os.listdir(directory))
                if f.startswith("jobs_") and f.endswith(".jsonl"))
    return [json.loads(line) for line in open(path) if line.strip()]


def gpus_of(job):
    if job.get("gpus"):
        return list(job["gpus"])
    return [job["gpu"]] if job.get("gpu") is not None else []


def is_multi_gpu(job):
    return len(gpus_of(job)) > 1 or job["name"].startswith("ddp2-")


def max_jobs_per_gpu(jobs):
    """Most jobs running at once on any one GPU; a job of several GPUs counts on each."""
    most = 0
    for gpu in sorted({g for j in jobs for g in gpus_of(j)}):
        # Ends before starts at the same instant: a job that ends as another starts does not overlap it.
        events = sorted([(j["start_s"], 1) for j in jobs if gpu in gpus_of(j) and j.get("start_s") is not None] +
                        [(j["end_s"], -1) for j in jobs if gpu in gpus_of(j) and j.get("end_s") is not None])
        running = 0
        for _, step in events:
            running += step
            most = max(most, running)
    return most


def main():
    p = argparse.ArgumentParser()
    p.add_argument("directory")
    p.add_argument("--reserve-after", type=float, required=True, help="colo run's --reserve-after (s)")
    p.add_argument("--merge", help="summary.json whose multi_gpu key to fill")
    p.add_argument("--command", action="append", default=[], help="the commands that produced the run")
    args = p.parse_args()

    jobs = records(args.directory)
    run = json.load(open(os.path.join(args.directory, "run.json")))
    monitor = json.load(open(os.path.join(args.directory, "monitor.json")))
    devices = monitor["devices"]
    names = sorted({d["name"] for d in devices})

    # Rank order as the runner tries jobs (no priorities or OOM retries in this trace).
    ranked = sorted(jobs, key=lambda j: (j["submit_s"], j["id"]))
    single = [j for j in jobs if not is_multi_gpu(j) and j.get("start_s") is not None and j.get("end_s") is not None]
    longest_single = max(single, key=lambda j: j["end_s"] - j["start_s"])
    longest_single_s = longest_single["end_s"] - longest_single["start_s"]
    bound_s = args.reserve_after + longest_single_s

    multi = []
    for i, j in enumerate(ranked):
        if not is_multi_gpu(j):
            continue
        gpus = gpus_of(j)
        started = j.get("start_s") is not None
        wait = j["start_s"] - j["submit_s"] if started else None
        before = [k["start_s"] for k in ranked[:i] if k.get("start_s") is not None]
        first_in_line = max([j["submit_s"]] + before)
        overtaken_by = [k["name"] for k in ranked[i + 1:]
                        if started and k.get("start_s") is not None and k["start_s"] < j["start_s"]]
        multi.append({
            "id": j["id"], "name": j["name"], "gpus": gpus, "state": j["state"],
            "submit_s": j["submit_s"], "start_s": j.get("start_s"),
            "wait_s": wait,
            "first_in_line_s": first_in_line,
            "wait_since_first_in_line_s": j["start_s"] - first_in_line if started else None,
            "run_s": j["end_s"] - j["start_s"] if started and j.get("end_s") is not None else None,
            "gang_placed": len(set(gpus)) == 2,
            "overtaken_by": overtaken_by,
            "peak_mem_bytes": j.get("peak_mem_bytes"),
        })

    jct = [j["end_s"] - j["submit_s"] for j in jobs if j.get("end_s") is not None]
    waits = [m["wait_s"] for m in multi if m["wait_s"] is not None]
    head_waits = [m["wait_since_first_in_line_s"] for m in multi if m["wait_since_first_in_line_s"] is not None]
    summary = {
        "run": os.path.normpath(args.directory),
        "gpu": names[0] if len(names) == 1 else names,
        "gpu_count": len(devices),
        "policy": run.get("policy"), "mode": run.get("mode"),
        "jobs": run["jobs"],
        "jobs_completed": run["completed"],
        "jobs_failed": run.get("failed"),
        "jobs_lost": run["jobs_lost"],
        "oom_events": run["oom_events"],
        "total_s": run["total_s"],
        "energy_j": sum(d["energy_j"] for d in devices),
        "energy_j_per_gpu": [d["energy_j"] for d in devices],
        "mean_jct_s": run["mean_jct_s"],
        "mean_jct_s_from_records": statistics.mean(jct) if jct else None,
        "max_jobs_per_gpu": max_jobs_per_gpu(jobs),
        "mean_sm_activity_per_gpu": [d.get("sm_active_mean") for d in devices],
        "multi_gpu_jobs": multi,
        "all_multi_gpu_gang_placed": bool(multi) and all(m["gang_placed"] for m in multi),
        "max_multi_gpu_wait_s": max(waits) if waits else None,
        "max_multi_gpu_wait_since_first_in_line_s": max(head_waits) if head_waits else None,
        "reserve_after_s": args.reserve_after,
        "longest_single_gpu_job": {"name": longest_single["name"], "run_s": longest_single_s},
        "reservation_bound_s": bound_s,
        "starved": [m["name"] for m in multi
                    if m["wait_since_first_in_line_s"] is None or m["wait_since_first_in_line_s"] > bound_s],
        "starved_wait_since_submit": [m["name"] for m in multi if m["wait_s"] is None or m["wait_s"] > bound_s],
        "starved_definition": ("a multi-GPU job whose wait since it was first in line (every job ranked before it "
                               "had started) exceeds reserve_after_s plus the longest single-GPU job's run time; "
                               "starved_wait_since_submit applies the same bound to the wait since submission"),
        "not_measured": ("per-job GPU memory of the multi-GPU jobs: colo's records give peak_mem_bytes 0 for them "
                         "(their torchrun worker processes' memory was not attributed to the job)"
                         if any(not m["peak_mem_bytes"] for m in multi) else None),
        "command": args.command,
    }
    if args.merge:
        whole = json.load(open(args.merge))
        whole["multi_gpu"] = summary
        with open(args.merge, "w") as f:
            json.dump(whole, f, indent=1)
            f.write("\n")
    else:
        print(json.dumps(summary, indent=1))
    for key in ("gpu", "gpu_count", "jobs", "jobs_completed", "jobs_lost", "oom_events", "total_s", "energy_j",
                "mean_jct_s", "max_jobs_per_gpu", "all_multi_gpu_gang_placed", "max_multi_gpu_wait_s",
                "max_multi_gpu_wait_since_first_in_line_s", "reservation_bound_s", "starved",
                "starved_wait_since_submit"):
        print(f"{key}: {summary[key]}")
    for m in multi:
        print(f"  {m['name']}: gpus {m['gpus']}, wait {m['wait_s']:.1f} s "
              f"({m['wait_since_first_in_line_s']:.1f} s first in line), run {m['run_s']:.1f} s, {m['state']}")


if __name__ == "__main__":
    main()
