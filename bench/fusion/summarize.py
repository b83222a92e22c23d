#!/usr/bin/env python3
"""Turns the fusion benchmark's raw measurements into bench/results/fusion/:
results.json (every measurement, grouped), summary.json (the issue's figures)
and throughput.png (aggregate samples/s against N for each strategy).

    summarize.py RAW.jsonl [RAW2.jsonl ...] --sweep sweep_check.json --gpu gpu.txt --out DIR"""
import argparse
import json
import sys
import os

STRATEGIES = ["sequential", "concurrent", "mps", "fused", "fused_cl", "pytorch"]
LABELS = {"sequential": "(a) sequential", "concurrent": "(b) concurrent processes",
          "mps": "(c) processes under MPS", "fused": "(d) colo fused",
          "fused_cl": "(d') colo fused, channels-last", "pytorch": "(e) PyTorch eager, hand-fused"}
COLORS = {"sequential": "tab:gray", "concurrent": "tab:orange", "mps": "tab:green", "fused": "tab:red",
          "fused_cl": "tab:purple", "pytorch": "tab:blue"}


def load(paths):
    rows = []
    for path in paths:
        rows += [json.loads(l) for l in open(path) if l.strip()]
    return rows


def aligned(r):
    """Processes whose timed windows started more than 0.5 s apart did not
    overlap: their summed throughput overstates what ran side by side."""
    return r.get("max_late_start_s", 0) <= 0.5


def rate(rows, model, strategy, n):
    """Aggregate samples/s; sequential's aggregate is one process's at any N."""
    if strategy == "sequential":
        n = 1
    found = [r for r in rows if r["model"] == model and r["strategy"] == strategy and r["models"] == n
             and r.get("samples_per_s") and aligned(r)]
    return found[-1]["samples_per_s"] if found else None


def energy_per_model_epoch(r, epoch_samples=60000):
    """Joules to train one model for one epoch of 60,000 samples, from the GPU's
    energy over the timed window and the samples trained in it."""
    if not r.get("energy_j") or not r.get("samples_per_s") or not r.get("window_s"):
        return None
    return r["energy_j"] / (r["samples_per_s"] * r["window_s"] / epoch_samples)


def plot(rows, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = [m for m in ("mlp", "lenet", "resnet18") if any(r["model"] == m for r in rows)]
    fig, axes = plt.subplots(1, len(models), figsize=(5.5 * len(models), 4.2), squeeze=False)
    for ax, model in zip(axes[0], models):
        ns = sorted({r["models"] for r in rows if r["model"] == model and r["strategy"] != "sequential"})
        for s in STRATEGIES:
            pts = [(n, rate(rows, model, s, n)) for n in ns]
            pts = [(n, v) for n, v in pts if v]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=LABELS[s], color=COLORS[s])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("models trained together (N)")
        ax.set_ylabel("aggregate training samples/s")
        ax.set_title(model + (" (synthetic 3x32x32)" if model == "resnet18" else " (Fashion-MNIST)"))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("raw", nargs="+")
    p.add_argument("--sweep")
    p.add_argument("--gpu")
    p.add_argument("--out", required=True)
    args = p.parse_args()
    rows = load(args.raw)
    os.makedirs(args.out, exist_ok=True)
    gpu = open(args.gpu).read().split(",")[0].strip() if args.gpu else None

    table = {}
    for r in rows:
        r["j_per_model_epoch"] = energy_per_model_epoch(r)
        table.setdefault(r["model"], {}).setdefault(r["strategy"], []).append(r)
    json.dump({"gpu": gpu, "measurements": table}, open(os.path.join(args.out, "results.json"), "w"), indent=1)

    def ratio(a, b):
        return a / b if a and b else None

    fused32 = rate(rows, "lenet", "fused", 32)
    summary = {
        "gpu": gpu,
        "lenet_n32_fused_samples_per_s": fused32,
        "lenet_n32_fused_over_pytorch_fused": ratio(fused32, rate(rows, "lenet", "pytorch", 32)),
        "lenet_n32_fused_over_sequential": ratio(fused32, rate(rows, "lenet", "sequential", 32)),
        "lenet_n32_fused_over_mps": ratio(fused32, rate(rows, "lenet", "mps", 32)),
        "mlp_n32_fused_over_sequential": ratio(rate(rows, "mlp", "fused", 32), rate(rows, "mlp", "sequential", 32)),
    }
    slower = []
    for n in sorted({r["models"] for r in rows if r["model"] == "resnet18"}):
        fused = max(filter(None, [rate(rows, "resnet18", "fused", n), rate(rows, "resnet18", "fused_cl", n)]), default=None)
        others = {s: rate(rows, "resnet18", s, n) for s in ("sequential", "concurrent", "mps", "pytorch")}
        best_s, best = max(((s, v) for s, v in others.items() if v), key=lambda x: x[1], default=(None, None))
        if fused and best and fused < best:
            slower.append({"n": n, "fused": fused, "best_other": best_s, "best_other_samples_per_s": best})
    summary["resnet18_fused_slower_than_best_any_n"] = bool(slower) if any(r["model"] == "resnet18" for r in rows) else None
    summary["resnet18_fused_slower_at"] = slower
    if args.sweep and os.path.exists(args.sweep):
        sweep = json.load(open(args.sweep))
        summary["sweep32_time_over_4_sequential"] = sweep["sweep32_time_over_4_sequential"]
        summary["sweep32_best_acc_gap_pp"] = sweep["sweep32_best_acc_gap_pp"]
        summary["sweep_check"] = sweep
    summary["per_n_samples_per_s"] = {
        m: {s: {str(n): rate(rows, m, s, n) for n in sorted({r["models"] for r in rows if r["model"] == m})}
            for s in STRATEGIES} for m in table}
    summary["command"] = ("bench/gpu/run.sh fusion (bench/fusion/run.sh BUILD OUT [MODEL...] -- [N...]; "
                          "bench/fusion/sweep_check.sh BUILD OUT); then here: python3 bench/fusion/summarize.py "
                          + " ".join(sys.argv[1:]) + " (of several raw files, a later one's row wins)")
    # Keys this script does not compute (notes added by hand) stay.
    path = os.path.join(args.out, "summary.json")
    if os.path.exists(path):
        for key, value in json.load(open(path)).items():
            summary.setdefault(key, value)
    json.dump(summary, open(path, "w"), indent=2)
    try:
        plot(rows, os.path.join(args.out, "throughput.png"))
    except ImportError:
        print("matplotlib missing: no plot")
    for k, v in summary.items():
        if k not in ("per_n_samples_per_s", "sweep_check", "command"):
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
