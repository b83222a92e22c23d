"""PNG reports of colo results.

    python3 python/colo/plots.py report DIR
    python3 python/colo/plots.py estimate DIR
    python3 python/colo/plots.py dist DIR
    python3 python/colo/plots.py dist-sim DIR
    python3 python/colo/plots.py compare DIR

DIR is what `colo simulate --out DIR` wrote (summary.json and
jobs_<policy>_<mode>.jsonl); any sampler CSV in it (`colo monitor --out
DIR/x.csv`) is plotted too. Writes policies.png (total time and energy per
policy), gantt_<policy>_<mode>.png (jobs on GPUs over time) and
timeline_<name>.png (memory, SM activity, power over time). Prints the
paths it wrote.

`estimate DIR` reads DIR/estimates.csv (bench/estimate/evaluate_estimators)
and writes DIR/estimate_vs_measured.png: each estimator's estimate against
the measured footprint on the held-out rows, log-log, with the +-10% band.

`dist DIR` reads the runs under DIR (each a `colo dist` output with
eval.jsonl and steps-rank0.jsonl) and writes
DIR/dist_loss.png (training loss against wall time) and
DIR/dist_accuracy.png (test accuracy against training time).

`compare DIR` reads DIR/summary.json (`colo compare --out DIR`) and writes
DIR/compare.png (each level's samples/s and samples per joule, the spread
of rounds as error bars, skipped levels named) and DIR/compare_timeline.png
(SM activity and memory over time at every level, from the summary's last
round's timeline_<level>.csv files).

`dist-sim DIR` reads DIR/simulate.jsonl (`colo dist simulate`) and writes
DIR/simulated_accuracy.png: test accuracy against simulated time per
strategy, with the target accuracy.
"""
import csv
import glob
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def time_unit(seconds):
    """A divisor and label that keep a span of `seconds` readable."""
    if seconds < 600:
        return 1.0, "s"
    if seconds < 3 * 3600:
        return 60.0, "min"
    return 3600.0, "h"


def energy_unit(joules):
    if joules < 1e6:
        return 1e3, "kJ"
    return 3.6e6, "kWh"


def policies_plot(summary, path):
    names = [f"{r['policy']}\n{r['mode']}" for r in summary]
    t_div, t_label = time_unit(max(r["total_s"] for r in summary))
    e_div, e_label = energy_unit(max(r["energy_j"] for r in summary))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    axes[0].bar(names, [r["total_s"] / t_div for r in summary], color="tab:blue")
    axes[0].set_ylabel(f"total time ({t_label})")
    axes[1].bar(names, [r["energy_j"] / e_div for r in summary], color="tab:orange")
    axes[1].set_ylabel(f"energy ({e_label})")
    for ax in axes:
        ax.tick_params(axis="x", labelsize=8)
    fig.suptitle("Trace by policy")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def jobs_per_gpu_plot(jobs, title, path):
    """Jobs running on each GPU over time, as steps."""
    placed = [j for j in jobs if j["gpu"] >= 0 and j["start_s"] >= 0 and j["end_s"] >= 0]
    gpus = sorted({j["gpu"] for j in placed})
    div, label = time_unit(max([j["end_s"] for j in placed] + [1]))
    fig, ax = plt.subplots(figsize=(10, 3))
    for g in gpus[:16]:
        events = sorted([(j["start_s"], 1) for j in placed if j["gpu"] == g] +
                        [(j["end_s"], -1) for j in placed if j["gpu"] == g])
        times, counts, running = [0.0], [0], 0
        for t, step in events:
            running += step
            times.append(t / div)
            counts.append(running)
        ax.step(times, counts, where="post", label=f"GPU {g}", linewidth=1)
    ax.set_xlabel(f"time ({label})")
    ax.set_ylabel("jobs running")
    ax.set_title(title + ": jobs per GPU", fontsize=9)
    if 1 < len(gpus) <= 16:
        ax.legend(fontsize=7, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def gantt_plot(jobs, title, path):
    fig, ax = plt.subplots(figsize=(10, 4))
    placed = [j for j in jobs if j["gpu"] >= 0 and j["start_s"] >= 0 and j["end_s"] >= 0]
    gpus = sorted({j["gpu"] for j in placed})
    div, label = time_unit(max([j["end_s"] for j in placed] + [1]))
    lanes, assigned = {}, []  # per GPU, overlapping jobs stacked in sub-lanes
    for j in sorted(placed, key=lambda j: j["start_s"]):
        ends = lanes.setdefault(j["gpu"], [])
        lane = next((i for i, e in enumerate(ends) if e <= j["start_s"]), len(ends))
        if lane == len(ends):
            ends.append(0)
        ends[lane] = j["end_s"]
        assigned.append((j, lane))
    height = 1.0 / max([len(e) for e in lanes.values()] + [1])
    colors = {"COMPLETED": "tab:green", "FAILED": "tab:red"}
    for j, lane in assigned:
        # A job that completed after running out of memory: its last attempt, in orange.
        color = "tab:orange" if j.get("oom_deaths", 0) and j["state"] == "COMPLETED" else colors.get(j["state"], "tab:gray")
        y = j["gpu"] - 0.5 + (lane + 0.5) * height
        ax.barh(y, (j["end_s"] - j["start_s"]) / div, left=j["start_s"] / div,
                height=height * 0.9, color=color, edgecolor="white", linewidth=1.0)
        if len(assigned) <= 40 and j.get("name"):
            ax.text(j["start_s"] / div, y, " " + j["name"], va="center", ha="left", fontsize=7, clip_on=True)
    ax.set_yticks(gpus)
    ax.set_yticklabels([f"GPU {g}" for g in gpus])
    ax.set_xlabel(f"time ({label})")
    ax.set_title(title + "  (green: completed, orange: completed after an OOM, red: failed)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def timeline_plot(csv_path, path):
    rows = list(csv.DictReader(open(csv_path)))
    if not rows:
        return False
    t0 = float(rows[0]["time_s"])
    fig, axes = plt.subplots(3, 1, figsize=(10, 6), sharex=True)
    for index in sorted({r["index"] for r in rows}):
        mine = [r for r in rows if r["index"] == index]
        t = [float(r["time_s"]) - t0 for r in mine]
        axes[0].plot(t, [int(r["mem_used_bytes"]) / 2**30 for r in mine], label=f"GPU {index}")
        sm = [float(r["sm_active"] or r["gpu_util"] or 0) for r in mine]
        axes[1].plot(t, [100 * s for s in sm])
        axes[2].plot(t, [float(r["power_w"] or 0) for r in mine])
    axes[0].set_ylabel("memory (GiB)")
    axes[1].set_ylabel("SM activity (%)")
    axes[2].set_ylabel("power (W)")
    axes[2].set_xlabel("time (s)")
    axes[0].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def report(directory):
    written = []
    summary_path = os.path.join(directory, "summary.json")
    if os.path.exists(summary_path):
        summary = json.load(open(summary_path))
        path = os.path.join(directory, "policies.png")
        policies_plot(summary, path)
        written.append(path)
    for jobs_path in sorted(glob.glob(os.path.join(directory, "jobs_*.jsonl"))):
        jobs = [json.loads(line) for line in open(jobs_path) if line.strip()]
        stem = os.path.basename(jobs_path)[len("jobs_"):-len(".jsonl")]
        path = os.path.join(directory, f"gantt_{stem}.png")
        gantt_plot(jobs, stem.replace("_", " / "), path)
        written.append(path)
        path = os.path.join(directory, f"jobs_per_gpu_{stem}.png")
        jobs_per_gpu_plot(jobs, stem.replace("_", " / "), path)
        written.append(path)
    for csv_path in sorted(glob.glob(os.path.join(directory, "*.csv"))):
        with open(csv_path) as f:
            if not f.readline().startswith("unix_s,time_s,index"):
                continue
        stem = os.path.basename(csv_path)[:-4]
        path = os.path.join(directory, (stem if stem.startswith("timeline_") else "timeline_" + stem) + ".png")
        if timeline_plot(csv_path, path):
            written.append(path)
    return written


def estimate_plot(directory):
    rows = [r for r in csv.DictReader(open(os.path.join(directory, "estimates.csv"))) if r["heldout"] == "1"]
    gib = 2.0 ** 30
    names = [("analytical", "analytical"), ("probe", "probe"), ("learned", "learned")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 5), sharex=True, sharey=True)
    colours = {"mlp": "tab:blue", "lenet": "tab:orange", "resnet": "tab:red", "transformer": "tab:green"}
    for ax, (column, title) in zip(axes, names):
        for model, colour in colours.items():
            pts = [(int(r["measured_footprint"]) / gib, int(r[column]) / gib)
                   for r in rows if r["model"] == model and int(r[column]) > 0]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=8, c=colour, label=model, alpha=0.7)
        lo, hi = 0.5, 100
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
        ax.plot([lo, hi], [lo * 0.9, hi * 0.9], "k:", lw=0.8)
        ax.plot([lo, hi], [lo * 1.1, hi * 1.1], "k:", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{title} ({len(rows)} held-out jobs)")
        ax.set_xlabel("measured peak footprint (GiB)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("estimate (GiB)")
    axes[0].legend()
    fig.tight_layout()
    path = os.path.join(directory, "estimate_vs_measured.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [path]


def save(fig, directory, name):
    path = os.path.join(directory, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def dist_plot(directory):
    runs = sorted(d for d in glob.glob(os.path.join(directory, "*")) if os.path.exists(os.path.join(d, "eval.jsonl")))
    written = []
    fig, ax = plt.subplots(figsize=(8, 5))
    for run in runs:
        steps = read_jsonl(os.path.join(run, "steps-rank0.jsonl"))
        window = 20
        smoothed = [sum(s["loss"] for s in steps[max(0, i - window):i + 1]) / len(steps[max(0, i - window):i + 1])
                    for i in range(len(steps))]
        ax.plot([s["wall_s"] for s in steps], smoothed, label=os.path.basename(run))
    ax.set_xlabel("wall time (s, evaluations included)")
    ax.set_ylabel(f"training loss (worker 0, mean of {20} steps)")
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    ax.legend()
    written.append(save(fig, directory, "dist_loss.png"))

    fig, ax = plt.subplots(figsize=(8, 5))
    target = None
    for run in runs:
        evals = read_jsonl(os.path.join(run, "eval.jsonl"))
        ax.plot([e["train_s"] for e in evals], [e["test_accuracy"] for e in evals], marker=".", label=os.path.basename(run))
        result = os.path.join(run, "result.json")
        if os.path.exists(result):
            target = json.load(open(result)).get("target_accuracy") or target
    if target:
        ax.axhline(target, color="k", ls=":", lw=0.8, label=f"target {target}")
    ax.set_xlabel("training time (s, evaluations excluded)")
    ax.set_ylabel("test accuracy")
    ax.grid(True, alpha=0.3)
    ax.legend()
    written.append(save(fig, directory, "dist_accuracy.png"))
    return written


def dist_sim_plot(directory):
    records = read_jsonl(os.path.join(directory, "simulate.jsonl"))
    summary = json.load(open(os.path.join(directory, "simulate-summary.json")))
    fig, ax = plt.subplots(figsize=(8, 5))
    for strategy in dict.fromkeys(r["strategy"] for r in records):
        rs = [r for r in records if r["strategy"] == strategy]
        ax.plot([r["time_s"] for r in rs], [r["test_accuracy"] for r in rs], marker=".", label=strategy)
    if summary.get("target_accuracy"):
        ax.axhline(summary["target_accuracy"], color="k", ls=":", lw=0.8, label="target")
    ax.set_xlabel("simulated time (s)")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"{summary['workers']} simulated workers, {summary['servers']} server(s)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return [save(fig, directory, "simulated_accuracy.png")]


def compare_plot(directory):
    summary = json.load(open(os.path.join(directory, "summary.json")))
    levels = summary["levels"]
    names = [lv["level"] for lv in levels]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    # The measures the recommendations ranked by (job files: x alone).
    labels = {"samples_per_s": "samples/s", "samples_per_j": "samples per joule",
              "normalised_throughput": "x alone (alone-seconds per second)",
              "alone_s_per_j": "alone-seconds per joule"}
    plotted = ((axes[0], summary["recommended_for_throughput"]), (axes[1], summary["recommended_for_energy"]))
    for ax, recommendation in plotted:
        key = recommendation.get("measure", "samples_per_s")
        label = labels.get(key, key)
        values = [lv.get(key, 0) for lv in levels]
        low = [v - lv.get(key + "_min", v) for v, lv in zip(values, levels)]
        high = [lv.get(key + "_max", v) - v for v, lv in zip(values, levels)]
        # Green only for a level told apart from the runner-up (summaries
        # before "recommended" existed name just their best).
        best = recommendation.get("recommended", recommendation.get("best"))
        colours = ["tab:green" if n == best else "tab:blue" for n in names]
        ax.bar(names, values, yerr=[low, high], color=colours, capsize=3)
        for i, lv in enumerate(levels):
            if "skipped" in lv or key not in lv:
                ax.text(i, 0, "skipped" if "skipped" in lv else "n/a", rotation=90, ha="center", va="bottom",
                        fontsize=8)
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle(f"{os.path.basename(summary['workload'])}: {summary['jobs']} jobs, {summary['rounds']} round(s)")
    written = [save(fig, directory, "compare.png")]
    # This run's last round and levels only: a rerun into the same --out
    # leaves an earlier run's round-R folders and timelines beside them (and
    # round-10 sorts before round-2).
    last_round = os.path.join(directory, f"round-{summary['rounds']}")
    timelines = [os.path.join(last_round, f"timeline_{name}.csv") for name in names]
    timelines = [path for path in timelines if os.path.exists(path)]
    if timelines:
        fig, axes = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
        for path in timelines:
            rows = list(csv.DictReader(open(path)))
            if not rows:
                continue
            level = os.path.basename(path)[len("timeline_"):-len(".csv")]
            t0 = float(rows[0]["time_s"])
            t = [float(r["time_s"]) - t0 for r in rows]
            axes[0].plot(t, [100 * float(r["sm_active"] or r["gpu_util"] or 0) for r in rows], label=level)
            axes[1].plot(t, [int(r["mem_used_bytes"]) / 2**30 for r in rows], label=level)
        axes[0].set_ylabel("SM activity (%)")
        axes[1].set_ylabel("memory (GiB)")
        axes[1].set_xlabel("time since the level started (s)")
        axes[0].legend(loc="upper right", fontsize=8)
        written.append(save(fig, directory, "compare_timeline.png"))
    return written


if __name__ == "__main__":
    commands = {"report": report, "estimate": estimate_plot, "dist": dist_plot, "dist-sim": dist_sim_plot,
                "compare": compare_plot}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    for p in commands[sys.argv[1]](sys.argv[2]):
        print(p)
