"""Issue 19's summary.json from shared-loading runs (shared_loading.py run):
the targets' figures from one GPU and one CPU run, further GPU runs beside
them, and every round of one setup pooled.

    python3 bench/data/shared_loading.py summarize --gpu RUN.json --cpu RUN.json --out summary.json
"""
import json
import os
import sys
from statistics import median


def shared_mode(modes):
    """The shared mode a run's figures are about: the device ring's, else
    the host ring's, else pace slowest's, else the scheduler's."""
    by = {m["mode"]: m for m in modes}
    return by.get("shared") or by.get("shared_host") or by.get("shared_slowest") or by["shared_scheduler"]


SETUP_KEYS = ("jobs", "cores", "device", "model", "steps", "batch", "size", "amp", "log_every", "cuda_waits", "chunk",
              "buffer", "ahead")


def setup_of(run):
    """A run's setup; with the mode `colo run` ran the shared_scheduler jobs
    in (read from its command for runs that did not record it)."""
    setup = {k: run.get(k) for k in SETUP_KEYS}
    if any(m["mode"] == "shared_scheduler" for m in run["modes"]):
        words = run["command"].split()
        given = words[words.index("--scheduler-mode") + 1] if "--scheduler-mode" in words else "shared"
        setup["scheduler_mode"] = run.get("scheduler_mode", given)
    return setup


def cpu_ratio_floor(run):
    """The CPU ratio perfect sharing would give in a run, from its own_colo
    jobs' CPU by thread (jobs_threads_core_ms_per_sample): decoding (the
    colo-decode threads) shared by all jobs, each job's training loop (its
    other threads) not: (c + d / jobs) / (c + d). None for runs that did
    not record threads."""
    own = next((m for m in run["modes"] if m["mode"] == "own_colo"), None)
    threads = own and own.get("jobs_threads_core_ms_per_sample")
    if not threads:
        return None
    decode = threads.get("colo-decode", 0.0)
    loop = sum(v for name, v in threads.items() if name != "colo-decode")
    return (loop + decode / run["jobs"]) / (loop + decode)


def by_job_kind(run):
    """For runs whose jobs differ (models or batch sizes), each kind of job
    ("MODEL/BATCH") in each mode's median round: its jobs' mean samples/s
    from first step to last, the most any of them waited (% of its time),
    and shared over own: how the fast and the slow fared apart, which the
    aggregate over the slowest job's span hides. None for runs of one kind
    of job."""
    if "," not in f"{run.get('model', '')}{run.get('batch', '')}":
        return None
    kinds = {}
    for m in run["modes"]:
        for job in m["jobs"]:
            kind = kinds.setdefault(f"{job['model']}/{job['batch']}", {}).setdefault(
                m["mode"], {"samples_per_s": [], "wait_pct_max": 0.0})
            seconds = job["end"] - job["start"]
            kind["samples_per_s"].append(job["samples"] / seconds)
            kind["wait_pct_max"] = max(kind["wait_pct_max"], 100 * job["wait_s"] / seconds)
    for modes in kinds.values():
        for figures in modes.values():
            figures["samples_per_s"] = sum(figures["samples_per_s"]) / len(figures["samples_per_s"])
        shared = next((modes[name] for name in ("shared", "shared_scheduler") if name in modes), None)
        if shared and "own_colo" in modes:
            modes["shared_over_own"] = shared["samples_per_s"] / modes["own_colo"]["samples_per_s"]
    return kinds


def summarize(args):
    """summary.json of issue 19's targets from one GPU run and one CPU run."""
    gpu, cpu = (json.load(open(path)) for path in (args.gpu, args.cpu))

    def worst_wait(run):
        return max(max(r["wait_pct"]) for r in shared_mode(run["modes"])["rounds"])

    def against_torch(run):
        by = {m["mode"]: m for m in run["modes"]}
        if "own_torch" not in by:
            return None
        return by["shared"]["samples_per_s"] / by["own_torch"]["samples_per_s"]

    summary = {"gpu_4jobs_speedup": gpu["speedup"], "gpu_4jobs_cpu_per_sample_ratio": gpu["cpu_per_sample_ratio"],
               # Which shared mode the figures are of (shared_scheduler: the jobs run by `colo run`).
               "gpu_4jobs_shared_mode": shared_mode(gpu["modes"])["mode"],
               # What perfect sharing would give: the jobs' own training loops stay.
               "gpu_4jobs_cpu_per_sample_ratio_floor": cpu_ratio_floor(gpu),
               "gpu_4jobs_best_own": gpu["best_own"], "gpu_4jobs_speedup_over_own_torch": against_torch(gpu),
               "cpu_2jobs_speedup": cpu["speedup"], "cpu_2jobs_cpu_per_sample_ratio": cpu["cpu_per_sample_ratio"],
               "cpu_2jobs_cpu_per_sample_ratio_floor": cpu_ratio_floor(cpu),
               # Both modes keep every core busy there, so samples/s goes as the inverse of CPU per
               # sample: the most perfect sharing could give.
               "cpu_2jobs_speedup_ceiling": 1 / cpu_ratio_floor(cpu) if cpu_ratio_floor(cpu) else None,
               "cpu_2jobs_best_own": cpu["best_own"], "cpu_2jobs_speedup_over_own_torch": against_torch(cpu),
               "consumer_wait_pct": {"gpu_4jobs": gpu["shared_wait_pct_max"], "cpu_2jobs": cpu["shared_wait_pct_max"]},
               # The same in the round in which a job waited most.
               "consumer_wait_pct_worst_round": {"gpu_4jobs": worst_wait(gpu), "cpu_2jobs": worst_wait(cpu)},
               # Over the window in which every job trains (medians of rounds).
               "all_running": {"gpu_4jobs": gpu.get("all_running"), "cpu_2jobs": cpu.get("all_running")},
               "targets": {"speedup": 1.8, "cpu_per_sample_ratio": 1 / 3, "consumer_wait_pct": 5},
               "setups": {name: setup_of(run) for name, run in (("gpu_4jobs", gpu), ("cpu_2jobs", cpu))},
               "commands": {"gpu_4jobs": gpu["command"], "cpu_2jobs": cpu["command"],
                            "summary": " ".join([sys.executable] + sys.argv)}}
    # Further GPU runs (another model or precision), each with the same figures.
    summary["other_gpu_runs"] = {}
    for path in args.gpu_other or []:
        run = json.load(open(path))
        summary["other_gpu_runs"][os.path.splitext(os.path.basename(path))[0]] = {
            "speedup": run["speedup"], "cpu_per_sample_ratio": run["cpu_per_sample_ratio"],
            "cpu_per_sample_ratio_floor": cpu_ratio_floor(run),
            "consumer_wait_pct": run["shared_wait_pct_max"], "best_own": run["best_own"],
            "all_running": run.get("all_running"),
            "by_job_kind": by_job_kind(run),
            "setup": setup_of(run),
            "command": run["command"]}
    if args.gpu_pool:
        summary["gpu_4jobs_pooled"] = pooled_rounds([args.gpu] + args.gpu_pool)
    if args.gpu_pool_without_start_group:
        # Launched once the ring was full, before start groups.
        summary["gpu_4jobs_pooled_without_start_group"] = pooled_rounds(args.gpu_pool_without_start_group)
    if args.decode_cost:
        cost = json.load(open(args.decode_cost))
        per = {k: v["decode_core_ms_per_sample_median"] for k, v in cost["setups"].items()}
        summary["decode_cost"] = {
            "setups": cost["setups"], "paced": cost["paced"], "cores": cost["cores"],
            # A sample decoded while the cores are partly idle, against busy (own decoding both).
            "own_paced_over_busy": per["own_paced"] / per["own_busy"],
            # The producer against own decoding at the same pace: what sharing itself costs.
            "producer_over_own_paced": per["producer_paced"] / per["own_paced"],
            "command": cost["command"]}
    if args.gpu_pool_earlier:
        # The same setup measured before the scheduler (and the bench) waited
        # for the producer's ring to fill before launching the jobs.
        summary["gpu_4jobs_pooled_launched_with_producer"] = pooled_rounds(args.gpu_pool_earlier)
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({k: v for k, v in summary.items() if k not in ("commands", "setups")}, indent=1))


def pooled_rounds(paths):
    """Every round of runs of one setup (buffer aside), pooled: how far a
    run's figures move from round to round and host to host. Speedup and
    CPU ratio are the shared rounds' median over the own rounds' median."""
    own, shared, rounds = [], [], []
    for path in paths:
        run = json.load(open(path))
        shared_name = shared_mode(run["modes"])["mode"]
        for m in run["modes"]:
            if m["mode"] not in ("own_colo", shared_name):
                continue
            for r in m["rounds"]:
                row = {"file": os.path.basename(path), "buffer": run["buffer"], "mode": m["mode"],
                       "samples_per_s": r["samples_per_s"], "cpu_core_s_per_sample": r["cpu_core_s_per_sample"],
                       "wait_pct_max": max(r["wait_pct"]),
                       "all_running_wait_pct_max": max(r["all_running"]["wait_pct"]) if r["all_running"] else None,
                       # Between the first job's first step and the last's (runs before the rounds kept jobs: None).
                       "start_spread_s": (max(j["start"] for j in r["jobs"]) - min(j["start"] for j in r["jobs"])
                                          if "jobs" in r else None)}
                rounds.append(row)
                (shared if m["mode"] == shared_name else own).append(row)
    own_cpu = median(r["cpu_core_s_per_sample"] for r in own)
    shared_cpu = [r["cpu_core_s_per_sample"] for r in shared]
    return {"own_rounds": len(own), "shared_rounds": len(shared),
            "speedup": median(r["samples_per_s"] for r in shared) / median(r["samples_per_s"] for r in own),
            "cpu_per_sample_ratio": median(shared_cpu) / own_cpu,
            "cpu_per_sample_ratio_range": [min(shared_cpu) / own_cpu, max(shared_cpu) / own_cpu],
            "wait_pct_max_median": median(r["wait_pct_max"] for r in shared),
            "wait_pct_max_worst": max(r["wait_pct_max"] for r in shared),
            "all_running_wait_pct_max_worst": max(r["all_running_wait_pct_max"] for r in shared),
            "rounds": rounds}
