"""Writes OUT/summary.json from bench/slurm/collect.sh's files (issue 21's keys)."""
import argparse
import json
import os


def gpu_run(directory):
    """The real Slurm run with the GPU machine's own GPU, from its status and attempt records."""
    status = json.load(open(os.path.join(directory, "status.json")))
    attempts = []
    for name in sorted(os.listdir(os.path.join(directory, "state", "attempts"))):
        a = json.load(open(os.path.join(directory, "state", "attempts", name)))
        attempts.append({k: a[k] for k in ("slurm_id", "name", "attempt", "state", "mps", "gpus", "mem_bytes",
                                           "peak_bytes", "energy_j", "reason")})
    return {
        "gpu": open(os.path.join(directory, "gpu.txt")).readline().strip(),
        "command": "scripts/slurm-carry.sh here; then on the GPU machine, carrying .deps and .slurm: "
                   "BUILD_TARGETS=colo bench/gpu/run.sh slurm",
        "jobs_submitted": status["jobs_submitted"], "jobs_completed": status["jobs_completed"],
        "oom_requeued": status["oom_requeued"], "lost": status["lost"],
        "max_jobs_per_gpu": status["max_jobs_per_gpu"],
        "all_under_mps": all(a["mps"] for a in attempts),
        "attempts": attempts,
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--gpus-per-node", type=int, required=True)
    p.add_argument("--command", required=True)
    p.add_argument("--gpu-run", help="a tests/gpu/slurm_on_gpu.sh result, unpacked (OUT/gpu)")
    a = p.parse_args()
    status = json.load(open(os.path.join(a.out, "status.json")))
    sims = {}
    for policy in ("exclusive", "slurm-shard", "magm", "best-fit"):
        run = json.load(open(os.path.join(a.out, f"sim_{policy}.json")))[0]
        sims[policy] = {k: run[k] for k in ("total_s", "energy_j", "mean_jct_s", "mean_wait_s", "oom_events",
                                            "oom_unrecovered", "jobs_lost", "simulation_wall_s")}
    exclusive = sims["exclusive"]
    for run in sims.values():
        run["speedup_vs_exclusive"] = exclusive["total_s"] / run["total_s"]
        run["energy_saved_pct"] = 100 * (1 - run["energy_j"] / exclusive["energy_j"])
    summary = {
        "real_slurm": "Slurm 22.05 on one host, two 80 GiB GPUs declared to Slurm (no GPU work: packing, OOM "
                      "recovery and bookkeeping), 1 GiB shards from colo slurm conf",
        "jobs_submitted": status["jobs_submitted"],
        "jobs_completed": status["jobs_completed"],
        "jobs_failed": status["jobs_failed"],
        "oom_requeued": status["oom_requeued"],
        "lost": status["lost"],
        "max_jobs_per_gpu": status["max_jobs_per_gpu"],
        "simulation": f"{a.jobs} jobs (colo trace generate --seed 7) on {a.nodes} nodes x {a.gpus_per_node} GPUs",
        "sim_100k_jobs_1024_gpus_s": max(r["simulation_wall_s"] for r in sims.values())
        if a.jobs == 100000 and a.nodes * a.gpus_per_node == 1024 else None,
        "policies": sims,
        "commands": a.command,
    }
    if a.gpu_run:
        summary["gpu_run"] = gpu_run(a.gpu_run)
    json.dump(summary, open(os.path.join(a.out, "summary.json"), "w"), indent=1)
    print(json.dumps({k: v for k, v in summary.items() if k != "policies"}, indent=1))
    for name, run in sims.items():
        print(f"{name:12s} makespan {run['total_s'] / 3600:6.2f} h  energy {run['energy_j'] / 3.6e6:8.1f} kWh  "
              f"x{run['speedup_vs_exclusive']:.2f}  OOM {run['oom_events']}  wall {run['simulation_wall_s']:.1f} s")


if __name__ == "__main__":
    main()
