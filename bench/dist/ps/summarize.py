"""Summarises bench/dist/ps/run.sh's runs: time to target accuracy of each
strategy with even workers and with worker 1's GPU shared, the ratios issue 20
asks for, and per-rank step times. Usage: summarize.py OUT_DIR (writes
OUT_DIR/summary.json, prints a table)."""
import json
import pathlib
import statistics
import sys


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


def main():
    out = pathlib.Path(sys.argv[1])
    runs = {}
    for directory in sorted(p for p in out.iterdir() if p.is_dir() and p.name != "configs"):
        summary = run_summary(directory)
        if summary:
            runs[directory.name] = summary
    tta = {name: r["tta_s"] for name, r in runs.items()}
    even_ar, uneven_ar = tta.get("even-allreduce"), tta.get("uneven-allreduce")
    uneven_candidates = [tta.get(n) for n in ("uneven-switch", "uneven-switch-ss", "uneven-ps-async")
                         if tta.get(n) is not None]
    best_uneven = min(uneven_candidates) if uneven_candidates else None
    slow = runs.get("uneven-allreduce", {}).get("ranks", {})
    summary = {
        "model": "resnet-18 on Fashion-MNIST, 2 workers x 128 per step, SGD lr 0.05 momentum 0.9, 3 epochs",
        "target_accuracy": 0.90,
        "transport": "ZeroMQ (libzmq, cppzmq): control messages, and the key ranges between hosts or with "
                     "transport = \"zmq\"; on one host the ranges move device to device through CUDA IPC "
                     "shared device memory (param_server.transport = \"auto\")",
        "tta_s": tta,
        "ps_sync_tta_over_allreduce": ratio(tta.get("even-ps-sync"), even_ar),
        "ps_async_tta_over_allreduce": ratio(tta.get("even-ps-async"), even_ar),
        "ps_async_zmq_tta_over_allreduce": ratio(tta.get("even-ps-async-zmq"), even_ar),
        "uneven_best_over_allreduce": ratio(best_uneven, uneven_ar),
        "uneven_allreduce_over_best": ratio(uneven_ar, best_uneven),
        "uneven_worker1_compute_over_worker0": (
            ratio(slow[1]["compute_ms"], slow[0]["compute_ms"]) if 0 in slow and 1 in slow else None),
        "switch_final_accuracy_minus_allreduce_points": {
            setup: (100 * (runs[f"{setup}-switch"]["final_test_accuracy"] - runs[f"{setup}-allreduce"]["final_test_accuracy"])
                    if f"{setup}-switch" in runs and f"{setup}-allreduce" in runs else None)
            for setup in ("even", "uneven")},
        "sync_switch_final_accuracy_minus_allreduce_points": {
            setup: (100 * (runs[f"{setup}-switch-ss"]["final_test_accuracy"] - runs[f"{setup}-allreduce"]["final_test_accuracy"])
                    if f"{setup}-switch-ss" in runs and f"{setup}-allreduce" in runs else None)
            for setup in ("even", "uneven")},
        "runs": runs,
        "commands": {
            "all": "bench/gpu/run.sh ps  (on nvidia-h200-x2; runs bench/dist/ps/run.sh BUILD OUT, then "
                   "bench/dist/ps/summarize.py)",
            "configs": "bench/results/dist/ps/configs/*.toml; uneven runs start bench/dist/ps/neighbour.py "
                       "on GPU 1 first",
        },
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"{'run':22} {'to 90% s':>9} {'final acc':>9} {'r0 step ms':>10} {'r1 step ms':>10} {'r1 compute ms':>13}")
    for name, r in runs.items():
        r0, r1 = r["ranks"].get(0, {}), r["ranks"].get(1, {})
        fmt = lambda v, d=2: "-" if v is None else f"{v:.{d}f}"
        print(f"{name:22} {fmt(r['tta_s']):>9} {fmt(r['final_test_accuracy'], 4):>9} "
              f"{fmt(r0.get('step_ms')):>10} {fmt(r1.get('step_ms')):>10} {fmt(r1.get('compute_ms')):>13}")
    for key in ("ps_sync_tta_over_allreduce", "ps_async_tta_over_allreduce", "ps_async_zmq_tta_over_allreduce",
                "uneven_best_over_allreduce", "uneven_worker1_compute_over_worker0"):
        value = summary[key]
        print(f"{key}: {'-' if value is None else round(value, 3)}")


if __name__ == "__main__":
    main()
