"""Predicts the strategies at 2, 8, 32 and 128 workers with `colo dist simulate`
(issue 53): time per step, samples/s and staleness, even and with one worker
at the measured slow speed, from the two-GPU runs' calibration.

The calibration is the one simulate_check.py fitted to the real two-GPU runs
(bench/results/dist/ps/summary.json, `simulator_check.calibration`): compute
per sample of a speed-1 worker, the slow worker's speed, and the link
between a worker and a server shard on one host. Two link set-ups:
  - up to 8 workers: one host, every link the calibrated one (CUDA IPC /
    NVLink), servers' links no limit;
  - beyond 8: hosts joined by one 400 Gbit/s link per GPU (InfiniBand NDR),
    5 us latency, for the ring and for the servers, whose shards sit one on
    each worker's GPU (servers = workers).
Only the timing is simulated (`[simulate] train = false`): no accuracy.

Usage: /usr/bin/python3 bench/dist/ps/predict_scale.py COLO OUT_DIR [--summary FILE]
Writes OUT_DIR/prediction.json and OUT_DIR/prediction.png (the cluster files
and simulator outputs go to OUT_DIR/runs/, removed at the end).
"""
import argparse
import json
import pathlib
import shutil
import subprocess
import sys

WORKERS = (2, 8, 32, 128)
STRATEGIES = ("allreduce", "ps-sync", "ps-async")
HOST_GPUS = 8
NETWORK_GBPS, NETWORK_LATENCY_US = 400.0, 5.0


def links(workers, calibrated_gbps):
    """(worker link Gbit/s, latency us, server link Gbit/s, where) for this many workers."""
    if workers <= HOST_GPUS:
        return calibrated_gbps, 0.0, 1e6, "one host"
    return NETWORK_GBPS, NETWORK_LATENCY_US, NETWORK_GBPS, f"{workers // HOST_GPUS} hosts, 400 Gbit/s per GPU"


def cluster_file(out, workers, slow_speed, calibration, batch, steps):
    gbps, latency, server_gbps, _ = links(workers, calibration["worker_bandwidth_gbps"])
    step_guess = calibration["compute_ms_per_sample"] * batch / 1000 / min(1.0, slow_speed)
    lines = [f'output = "{out}"', f"batch_size = {batch}", "seed = 1",
             "[model]", 'name = "resnet"', "depth = 18",
             "[data]", 'name = "fashion-mnist"', "prefetch = 0",
             "[optimizer]", 'name = "sgd"', "lr = 0.05", "momentum = 0.9",
             "[cluster]", f"workers = {workers}", f"servers = {workers}", 'strategy = "allreduce"',
             "[simulate]", "train = false",
             f"compute_ms_per_sample = {calibration['compute_ms_per_sample']}",
             f"server_bandwidth_gbps = {server_gbps}", f"server_latency_us = {latency}",
             f"max_time_s = {steps * step_guess}", f"eval_every_s = {steps * step_guess}",
             "strategies = [" + ", ".join(f'"{s}"' for s in STRATEGIES) + "]"]
    for w in range(workers):
        speed = slow_speed if w == workers - 1 else 1.0
        lines += ["[[simulate.worker]]", f"speed = {speed}", f"bandwidth_gbps = {gbps}", f"latency_us = {latency}"]
    return "\n".join(lines) + "\n"


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    colours = {"allreduce": "tab:blue", "ps-sync": "tab:orange", "ps-async": "tab:green"}
    for case, style in (("even", "-"), ("uneven", "--")):
        for strategy in STRATEGIES:
            points = [(r["workers"], r["strategies"][strategy]) for r in rows if r["case"] == case]
            xs = [w for w, _ in points]
            left.plot(xs, [s["samples_per_s"] / w for w, s in points], style, marker="o",
                      color=colours[strategy], label=f"{strategy}, {case}")
            if strategy == "ps-async":
                right.plot(xs, [s["mean_staleness"] for _, s in points], style, marker="o", label=case)
    for axis in (left, right):
        axis.set_xscale("log", base=2)
        axis.set_xticks(WORKERS, [str(w) for w in WORKERS])
        axis.set_xlabel("workers (beyond 8: hosts of 8 GPUs, 400 Gbit/s per GPU)")
        axis.grid(alpha=0.3)
    left.set_ylabel("samples/s per worker (simulated)")
    left.set_title("ResNet-18, 128 per worker; uneven: one worker at 0.515x")
    left.legend(fontsize=7)
    right.set_ylabel("async PS: mean staleness (updates)")
    right.set_title("staleness grows with the workers")
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("colo")
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--summary", type=pathlib.Path, default=pathlib.Path("bench/results/dist/ps/summary.json"))
    parser.add_argument("--steps", type=int, default=200, help="synchronous steps of the slowest set-up to simulate")
    args = parser.parse_args()
    summary = json.loads(args.summary.read_text())
    calibration = summary["simulator_check"]["calibration"]
    batch = 128
    rows = []
    for workers in WORKERS:
        for case, slow in (("even", 1.0), ("uneven", calibration["worker1_speed"])):
            name = f"w{workers}-{case}"
            (args.out / "runs" / name).mkdir(parents=True, exist_ok=True)
            config = args.out / "runs" / name / "cluster.toml"
            config.write_text(cluster_file(args.out / "runs" / name, workers, slow, calibration, batch, args.steps))
            subprocess.run([args.colo, "dist", "simulate", str(config)], check=True, stdout=subprocess.DEVNULL)
            result = json.loads((args.out / "runs" / name / "simulate-summary.json").read_text())
            rows.append({"workers": workers, "case": case, "slow_worker_speed": slow,
                         "links": links(workers, calibration["worker_bandwidth_gbps"])[3],
                         "strategies": {s: {k: result["strategies"][s][k]
                                            for k in ("step_s", "samples_per_s", "mean_staleness")}
                                        for s in STRATEGIES}})
            best = max(STRATEGIES, key=lambda s: rows[-1]["strategies"][s]["samples_per_s"])
            rows[-1]["fastest"] = best
            print(f"{workers:4d} workers, {case:6s}: " + ", ".join(
                f"{s} {rows[-1]['strategies'][s]['samples_per_s']:.0f}/s" for s in STRATEGIES)
                + f"; async staleness {rows[-1]['strategies']['ps-async']['mean_staleness']:.2f}; fastest {best}")
    (args.out / "prediction.json").write_text(json.dumps({
        "issue": 53,
        "what": "colo dist simulate, timing only, of ResNet-18 on Fashion-MNIST (128 per worker) at 2-128 workers",
        "calibration": calibration,
        "calibration_from": str(args.summary) + " simulator_check (the two-GPU runs)",
        "links": {"up_to_8": "one host: the calibrated worker link, servers unlimited",
                  "beyond_8": f"{NETWORK_GBPS:g} Gbit/s per GPU, {NETWORK_LATENCY_US:g} us, servers = workers"},
        "command": "/usr/bin/python3 bench/dist/ps/predict_scale.py build/colo " + str(args.out),
        "rows": rows}, indent=1) + "\n")
    plot(rows, args.out / "prediction.png")
    shutil.rmtree(args.out / "runs", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
