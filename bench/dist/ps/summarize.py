"""Summarises bench/dist/ps/run.sh's runs: time to target accuracy of each
strategy with even workers and with worker 1's GPU shared, the ratios issue 53
asks for (medians of the rounds, with their spread), and per-rank step times. Usage: summarize.py OUT_DIR (writes
OUT_DIR/summary.json, prints a table)."""
import importlib.util
import json
import pathlib
import statistics
import sys


def _dist_summarize():
    """bench/dist/summarize.py, loaded by its path (its module name is this file's too)."""
    path = pathlib.Path(__file__).resolve().parent.parent / "summarize.py"
    spec = importlib.util.spec_from_file_location("dist_summarize", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


busbw_by_world = _dist_summarize().busbw_by_world


def read_jsonl(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_summary(directory):
    result_path = directory / "result.json"
    if not result_path.exists():
        return None
    result = json.loads(result_path.read_text())
    ranks = {}
    for rank in (0, 1):
        steps = read_jsonl(directory / f"steps-rank{rank}.jsonl")[20:]  # warm-up left out
        if not steps:
            continue
        ranks[rank] = {
            "steps": len(steps) + 20,
            "compute_ms": 1000 * statistics.mean(s["compute_s"] for s in steps),
            "communication_ms": 1000 * statistics.mean(s["communication_s"] for s in steps),
            "waiting_ms": 1000 * statistics.mean(s["waiting_s"] for s in steps),
            "step_ms": 1000 * statistics.mean(s["step_s"] for s in steps),
        }
        phased = [s["exchange_phases_s"] for s in steps if "exchange_phases_s" in s]
        if phased:  # the parameter server's exchange by phase (receive, apply, to_host, send)
            ranks[rank]["exchange_phases_ms"] = {
                key: 1000 * statistics.mean(p.get(key, 0) for p in phased) for key in phased[0]}
    return {
        "tta_s": result.get("time_to_target_s"),
        "final_test_accuracy": result.get("test_accuracy"),
        "train_s": result.get("train_s"),
        "samples_per_s": result.get("samples_per_s"),
        "switched_at_step": result.get("switched_at_step"),
        "ranks": ranks,
    }


def ratio(a, b):
    return a / b if a is not None and b else None


def spread(values):
    """Median over every round, a round that never reached the target (None)
    counting as slower than any that did: None when half or more did not.
    Lowest and highest of those that did, how many did, and every value."""
    got = [v for v in values if v is not None]
    if not got:
        return {"median": None, "min": None, "max": None, "reached": 0, "values": values}
    ordered = sorted(values, key=lambda v: float("inf") if v is None else v)
    middle = ordered[(len(ordered) - 1) // 2: len(ordered) // 2 + 1]
    median = None if None in middle else statistics.mean(middle)
    return {"median": median, "min": min(got), "max": max(got), "reached": len(got), "values": values}


def slowdown(run):
    ranks = run["ranks"]
    return ratio(ranks[1]["compute_ms"], ranks[0]["compute_ms"]) if 0 in ranks and 1 in ranks else None


def busbw_summary(path):
    """colo's all-reduce bus bandwidth of 256 MiB on 2 GPUs against PyTorch's NCCL, from the same call."""
    two = busbw_by_world(path).get(2)
    if not two:
        return {"allreduce_busbw_over_nccl": None}
    return {"allreduce_busbw_over_nccl": two[0] / two[1], "busbw_colo_gbps": two[0], "busbw_torch_gbps": two[1]}


def main():
    out = pathlib.Path(sys.argv[1])
    rounds = {}  # run name -> its rounds' summaries (NAME, NAME.r2, NAME.r3 ...)
    for directory in sorted(p for p in out.iterdir() if p.is_dir() and p.name != "configs"):
        summary = run_summary(directory)
        if summary:
            rounds.setdefault(directory.name.split(".r")[0], []).append(summary)
    tta = {name: spread([r["tta_s"] for r in rs]) for name, rs in rounds.items()}
    accuracy = {name: spread([r["final_test_accuracy"] for r in rs]) for name, rs in rounds.items()}
    median = {name: t["median"] for name, t in tta.items()}
    step_ms = {name: statistics.median(r["ranks"][0]["step_ms"] for r in rs if 0 in r["ranks"])
               for name, rs in rounds.items() if any(0 in r["ranks"] for r in rs)}
    even_ar, uneven_ar = median.get("even-allreduce"), median.get("uneven-allreduce")
    uneven = {n: median[n] for n in ("uneven-switch", "uneven-switch-ss", "uneven-ps-async", "uneven-ps-async-ov",
                                     "uneven-ps-async-sl", "uneven-ps-ssp") if median.get(n) is not None}
    even_async = {n: median[n] for n in ("even-ps-async", "even-ps-async-ov") if median.get(n) is not None}
    best_async = min(even_async, key=even_async.get) if even_async else None
    best_uneven = min(uneven, key=uneven.get) if uneven else None
    switched = {n: t for n, t in uneven.items() if n.startswith("uneven-switch")}
    best_switch = min(switched, key=switched.get) if switched else None
    slowdowns = [slowdown(r) for name, rs in rounds.items() if name.startswith("uneven-") for r in rs]
    gap = lambda name: (100 * (accuracy[name]["median"] - accuracy["uneven-allreduce"]["median"])
                        if name in accuracy and "uneven-allreduce" in accuracy
                        and accuracy[name]["median"] is not None else None)
    gpu_file = out.parent / "gpu.txt"
    summary = {
        "gpu": gpu_file.read_text().splitlines()[0] if gpu_file.exists() else None,
        "rounds": max((len(rs) for rs in rounds.values()), default=0),
        "model": "resnet-18 on Fashion-MNIST, 2 workers x 128 per step, SGD lr 0.05 momentum 0.9, 3 epochs",
        "target_accuracy": 0.90,
        "transport": "ZeroMQ (libzmq, cppzmq): control messages, and the key ranges between hosts or with "
                     "transport = \"zmq\"; on one host the ranges move device to device through CUDA IPC "
                     "shared device memory (param_server.transport = \"auto\")",
        "tta_s": tta,
        "final_test_accuracy": accuracy,
        "ps_sync_tta_over_allreduce": ratio(median.get("even-ps-sync"), even_ar),
        "ps_async_tta_over_allreduce": ratio(even_async.get(best_async), even_ar),
        "ps_async_best_run": best_async,
        "ps_async_tta_over_allreduce_by_run": {n: ratio(t, even_ar) for n, t in even_async.items()},
        "ps_async_zmq_tta_over_allreduce": ratio(median.get("even-ps-async-zmq"), even_ar),
        # What the ZeroMQ path costs per step, whether or not its rounds reached the target.
        "ps_async_zmq_step_over_allreduce": ratio(step_ms.get("even-ps-async-zmq"), step_ms.get("even-allreduce")),
        "rank0_step_ms": step_ms,
        "uneven_slowdown": spread(slowdowns),
        "uneven_best_strategy": best_uneven,
        "uneven_best_over_allreduce": ratio(uneven.get(best_uneven), uneven_ar),
        # The switched run (the faster of the two rules) against uneven all-reduce.
        "uneven_best_switch": best_switch,
        "uneven_best_switch_over_allreduce": ratio(switched.get(best_switch), uneven_ar),
        "switch_accuracy_gap_points": gap(best_switch) if best_switch else None,
        "uneven_accuracy_gap_points": {name: gap(name) for name in uneven},
        **busbw_summary(out / "busbw.jsonl"),
        "runs": {name: rs[0] for name, rs in rounds.items()},
        "commands": {
            "all": "bench/gpu/run.sh ps  (on two GPUs; runs bench/dist/ps/run.sh BUILD OUT, then "
                   "bench/dist/ps/summarize.py and simulate_check.py)",
            "configs": "configs/*.toml; uneven runs start bench/dist/ps/neighbour.py on GPU 1 first",
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    fmt = lambda v, d=2: "-" if v is None else f"{v:.{d}f}"
    print(f"{'run':22} {'to 90% s (median, min-max) reached':>34} {'final acc':>9} {'r0 step ms':>10} {'r1 step ms':>10} "
          f"{'r1/r0 compute':>13}")
    for name, rs in rounds.items():
        t, r0, r1 = tta[name], rs[0]["ranks"].get(0, {}), rs[0]["ranks"].get(1, {})
        print(f"{name:22} {fmt(t['median']):>12} ({fmt(t['min'])}-{fmt(t['max'])}) {t['reached']}/{len(rs)} "
              f"{fmt(accuracy[name]['median'], 4):>9} {fmt(r0.get('step_ms')):>10} {fmt(r1.get('step_ms')):>10} "
              f"{fmt(slowdown(rs[0])):>13}")
    for key in ("ps_sync_tta_over_allreduce", "ps_async_tta_over_allreduce", "ps_async_best_run",
                "ps_async_zmq_tta_over_allreduce", "ps_async_zmq_step_over_allreduce", "uneven_best_over_allreduce", "uneven_best_strategy",
                "uneven_best_switch", "uneven_best_switch_over_allreduce", "switch_accuracy_gap_points",
                "allreduce_busbw_over_nccl"):
        value = summary[key]
        print(f"{key}: {'-' if value is None else (round(value, 3) if isinstance(value, float) else value)}")
    print(f"uneven_slowdown: median {fmt(summary['uneven_slowdown']['median'])} "
          f"({fmt(summary['uneven_slowdown']['min'])}-{fmt(summary['uneven_slowdown']['max'])})")


if __name__ == "__main__":
    main()
