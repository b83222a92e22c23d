"""Checks `colo dist simulate` against the real runs of bench/dist/ps/run.sh.

The simulator is calibrated on the even runs only and then predicts the
uneven ones (held out):
  - compute_ms_per_sample: rank 0's mean step time in even-allreduce, less
    its communication and waiting, over the batch of 128;
  - worker 1's speed: rank 0's over rank 1's mean step time, less
    communication and waiting, in uneven-ps-async, where neither waits for
    the other (the neighbour job's effect, which the simulator is told);
  - each worker's link: from even-ps-async, whose exchange (push + pull of the
    model, servers answering at once) took rank 0's mean communication time:
    bandwidth = 2 x model bytes / that time; the servers' links are not the
    limit on one host (1e6 Gbit/s).
Predicted against measured: uneven all-reduce time per step (rank 0's mean
step time) and uneven async-PS staleness (the servers' mean, from their logs).
The simulation is timing only (`train = false`) and runs each worker for the
steps the real ones ran (`steps_per_worker`): the fast async worker ends
first and the slow one pushes alone after it, as in the real run.
Usage: simulate_check.py COLO OUT_DIR (OUT_DIR holds the runs); adds
sim_step_time_error_pct and sim_staleness_error_pct to OUT_DIR/summary.json.
"""
import json
import pathlib
import re
import statistics
import subprocess
import sys


def mean_of(directory, rank, key):
    lines = (directory / f"steps-rank{rank}.jsonl").read_text().splitlines()[20:]
    return statistics.mean(json.loads(line)[key] for line in lines if line.strip())


def own_step_s(directory, rank):
    """A rank's mean step time less its communication and waiting: what the
    simulator's compute stands for (the forward and backward, but also the
    data, the optimiser and the launches, which a shared GPU slows too)."""
    return (mean_of(directory, rank, "step_s") - mean_of(directory, rank, "communication_s")
            - mean_of(directory, rank, "waiting_s"))


def server_staleness(directory):
    values = []
    for log in sorted(directory.glob("rank*.log")):
        match = re.search(r"mean staleness ([0-9.]+)", log.read_text())
        if match:
            values.append(float(match.group(1)))
    return statistics.mean(values) if values else None


def simulate(colo, out, name, calibration, worker1_speed, strategies, overlap=False):
    """`colo dist simulate`, timing only, of 2 workers with `calibration`
    (worker 1 at `worker1_speed`); its strategies' summaries."""
    c = calibration
    config = out / "configs" / f"{name}.toml"
    config.write_text(f"""seed = 1
output = "{out / name}"
batch_size = {c['batch']}
eval_batch_size = 1024
[model]
name = "resnet"
depth = 18
[data]
name = "fashion-mnist"
prefetch = 0
test_limit = 1024  # accuracy is not what is checked
[optimizer]
name = "sgd"
lr = 0.05
momentum = 0.9
[cluster]
workers = 2
servers = 2
strategy = "allreduce"
[param_server]
overlap = {str(overlap).lower()}
[simulate]
compute_ms_per_sample = {c['compute_ms_per_sample']}
server_bandwidth_gbps = 1000000
server_latency_us = 0
max_time_s = {c['budget_s']}
eval_every_s = {c['budget_s']}
train = false
steps_per_worker = {c['steps']}
strategies = {json.dumps(strategies)}
[[simulate.worker]]
speed = 1.0
bandwidth_gbps = {c['bandwidth_gbps']}
latency_us = 0
[[simulate.worker]]
speed = {worker1_speed}
bandwidth_gbps = {c['bandwidth_gbps']}
latency_us = 0
""")
    subprocess.run([colo, "dist", "simulate", str(config)], check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / name / "simulate-summary.json").read_text())["strategies"]


def overlap_check(colo, out, calibration):
    """Even async PS with and without overlap (over CUDA IPC): the simulated
    gain in samples/s against the real one in rank 0's step time; None
    without an even-ps-async-ov run."""
    plain, overlapped = out / "even-ps-async", out / "even-ps-async-ov"
    if not (overlapped / "steps-rank0.jsonl").exists():
        return None
    sim = {ov: simulate(colo, out, f"simulate-even-overlap-{str(ov).lower()}", calibration, 1.0, ["ps-async"],
                        overlap=ov)["ps-async"]["samples_per_s"] for ov in (False, True)}
    real_gain = mean_of(plain, 0, "step_s") / mean_of(overlapped, 0, "step_s")
    sim_gain = sim[True] / sim[False]
    return {"real_gain": real_gain, "simulated_gain": sim_gain, "simulated_samples_per_s": {"plain": sim[False],
            "overlap": sim[True]}, "error_pct": 100 * abs(sim_gain - real_gain) / real_gain,
            "what": "even async PS over CUDA IPC: samples/s with overlap over without, simulated (timing only) "
                    "against rank 0's mean step time without over with"}


def main():
    colo, out = sys.argv[1], pathlib.Path(sys.argv[2])
    even_ar, even_async = out / "even-allreduce", out / "even-ps-async"
    uneven_ar, uneven_async = out / "uneven-allreduce", out / "uneven-ps-async"
    if not all((d / "steps-rank1.jsonl").exists() for d in (even_ar, even_async, uneven_ar, uneven_async)):
        print("simulate check: needs even- and uneven- allreduce and ps-async runs")
        return
    result = json.loads((even_ar / "result.json").read_text())
    batch = result["batch_per_worker"]
    model_bytes = 4 * result["parameters"]
    compute_ms_per_sample = 1000 * own_step_s(even_ar, 0) / batch
    speed1 = own_step_s(uneven_async, 0) / own_step_s(uneven_async, 1)
    exchange_s = mean_of(even_async, 0, "communication_s")
    bandwidth_gbps = 2 * model_bytes * 8 / max(exchange_s, 1e-6) / 1e9
    step_guess_s = compute_ms_per_sample * batch / 1000 / speed1
    steps = json.loads((uneven_async / "result.json").read_text())["steps"]  # each worker's, as the real run
    calibration = dict(batch=batch, compute_ms_per_sample=compute_ms_per_sample, bandwidth_gbps=bandwidth_gbps,
                       steps=steps, budget_s=2 * steps * step_guess_s)
    simulated = simulate(colo, out, "simulate-uneven", calibration, speed1, ["allreduce", "ps-async"])
    real_step_s = mean_of(uneven_ar, 0, "step_s")
    real_staleness = server_staleness(uneven_async)
    sim_step_s = simulated["allreduce"]["step_s"]
    sim_staleness = simulated["ps-async"]["mean_staleness"]
    check = {
        "calibration": {"compute_ms_per_sample": compute_ms_per_sample, "worker1_speed": speed1,
                        "worker_bandwidth_gbps": bandwidth_gbps, "from": "even-allreduce and uneven-ps-async step "
                        "times less communication and waiting; even-ps-async communication"},
        "uneven_allreduce_step_s": {"real": real_step_s, "simulated": sim_step_s},
        "uneven_ps_async_staleness": {"real": real_staleness, "simulated": sim_staleness},
        "sim_step_time_error_pct": 100 * abs(sim_step_s - real_step_s) / real_step_s,
        "sim_staleness_error_pct": (100 * abs(sim_staleness - real_staleness) / real_staleness
                                    if real_staleness else None),
        "command": "python3 bench/dist/ps/simulate_check.py BUILD/colo OUT (run by bench/dist/ps/run.sh)",
        "overlap": overlap_check(colo, out, calibration),
    }
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    summary["simulator_check"] = check
    summary["sim_step_time_error_pct"] = check["sim_step_time_error_pct"]
    summary["sim_staleness_error_pct"] = check["sim_staleness_error_pct"]
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    print(f"simulator vs real (uneven): step {1000 * sim_step_s:.2f} vs {1000 * real_step_s:.2f} ms "
          f"({check['sim_step_time_error_pct']:.1f}%), staleness {sim_staleness:.3f} vs "
          f"{real_staleness if real_staleness is not None else float('nan'):.3f}")
    if check["overlap"]:
        o = check["overlap"]
        print(f"simulator vs real (even, overlap): samples/s x{o['simulated_gain']:.3f} vs x{o['real_gain']:.3f} "
              f"({o['error_pct']:.1f}%)")


if __name__ == "__main__":
    main()
