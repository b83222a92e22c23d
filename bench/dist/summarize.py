"""Summarises bench/dist/run.sh's results directory: prints a table and
writes summary.json (the fields issue 7 asks for)."""
import glob
import json
import os
import subprocess
import sys

WARMUP_STEPS = 30  # cuDNN autotuning and NCCL set-up stay out of the throughput


def read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def busbw_by_world(path):
    """{world: (colo's bus bandwidth, PyTorch NCCL's)} in GB/s from a busbw.jsonl
    (bench/dist/run.sh busbw), for every world that has both."""
    rows = read_jsonl(str(path))
    both = {}
    for world in sorted({r["world"] for r in rows}):
        colo = [r["busbw_gbps"] for r in rows if r["world"] == world and r["impl"] == "colo"]
        torch = [r["busbw_gbps"] for r in rows if r["world"] == world and r["impl"] == "torch"]
        if colo and torch:
            both[world] = (colo[0], torch[0])
    return both


def throughput(run_dir):
    result_path = os.path.join(run_dir, "result.json")
    if not os.path.exists(result_path):
        return None
    result = json.load(open(result_path))
    steps = read_jsonl(os.path.join(run_dir, "steps-rank0.jsonl"))[WARMUP_STEPS:]
    if not steps:
        return None
    seconds = sum(s["step_s"] for s in steps)
    return result["workers"] * result["batch_per_worker"] * len(steps) / seconds


def main(out):
    gpu = "unknown"
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.splitlines()[0].strip()
    except (OSError, IndexError):
        pass
    summary = {"gpu": gpu}
    ratios = {}
    for world, (colo, torch) in busbw_by_world(os.path.join(out, "busbw.jsonl")).items():
        ratios[world] = colo / torch
        summary[f"busbw_colo_{world}gpu_gbps"] = colo
        summary[f"busbw_torch_{world}gpu_gbps"] = torch
    summary["busbw_over_nccl_256mib"] = ratios.get(2)
    if 4 in ratios:
        summary["busbw_over_nccl_256mib_4gpu"] = ratios[4]

    rates = {w: throughput(os.path.join(out, f"scaling-{w}")) for w in (1, 2, 4)}
    for w, rate in rates.items():
        if rate:
            summary[f"resnet18_samples_per_s_{w}gpu"] = rate
    for w in (2, 4):
        eff = rates[w] / (w * rates[1]) if rates.get(w) and rates.get(1) else None
        summary[f"allreduce_eff_{w}gpu"] = eff

    # Variants of the scaling runs (SCALING_VARIANTS): scaling-<variant>-<W>.
    variants = {}
    for path in sorted(p for p in glob.glob(os.path.join(out, "scaling-*-*")) if os.path.isdir(p)):
        name = os.path.basename(path)
        variant, w = name[len("scaling-"):].rsplit("-", 1)
        variants.setdefault(variant, {})[int(w)] = throughput(path)
    for variant, by_w in variants.items():
        for w in (2, 4):
            if by_w.get(w) and by_w.get(1):
                summary[f"allreduce_eff_{w}gpu_{variant}"] = by_w[w] / (w * by_w[1])

    tta = {}
    target = None
    rows = []
    for strategy in ("allreduce", "ps-sync", "ps-async", "switch"):
        path = os.path.join(out, f"tta-{strategy}", "result.json")
        if not os.path.exists(path):
            continue
        result = json.load(open(path))
        target = result["target_accuracy"]
        tta[strategy] = result["time_to_target_s"]
        rows.append((strategy, result["steps"], result["train_s"], result["samples_per_s"],
                     result["test_accuracy"], result["time_to_target_s"], result["mean_compute_s"],
                     result["mean_communication_s"], result["mean_waiting_s"], result.get("switched_at_step", -1)))
    summary["tta_s"] = tta
    summary["target_accuracy"] = target
    summary["tta_model"] = "resnet-18 on Fashion-MNIST, 2 workers x 128 per step, SGD lr 0.05 momentum 0.9"
    summary["commands"] = {
        "all": "bench/gpu/run.sh dist  (on nvidia-h200-x2; runs bench/dist/run.sh BUILD OUT)",
        "busbw_colo": "COLO_DIST_RANK=r COLO_DIST_WORLD=W COLO_DIST_RENDEZVOUS=tcp://127.0.0.1:PORT build/bench/allreduce_busbw --mib 256",
        "busbw_torch": "torchrun --standalone --nproc_per_node=W bench/dist/nccl_busbw.py --mib 256",
        "scaling": "colo dist bench/results/dist/configs/scaling-W.toml",
        "tta": "colo dist bench/results/dist/configs/tta-STRATEGY.toml",
    }
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)

    print(f"gpu: {gpu}")
    for world, ratio in sorted(ratios.items()):
        print(f"busbw 256 MiB, {world} GPUs: colo {summary[f'busbw_colo_{world}gpu_gbps']:.1f} GB/s, "
              f"torch {summary[f'busbw_torch_{world}gpu_gbps']:.1f} GB/s, ratio {ratio:.3f}")
    for w, rate in rates.items():
        if rate:
            eff = summary.get(f"allreduce_eff_{w}gpu")
            print(f"resnet-18 allreduce {w} GPU(s): {rate:.0f} samples/s" +
                  (f", efficiency {eff:.3f}" if eff else ""))
    for variant, by_w in variants.items():
        print(f"variant {variant}: " + ", ".join(
            f"{w} GPU(s) {rate:.0f} samples/s" + (f" (eff {summary[f'allreduce_eff_{w}gpu_{variant}']:.3f})"
                                                  if f"allreduce_eff_{w}gpu_{variant}" in summary else "")
            for w, rate in sorted(by_w.items()) if rate))
    print(f"{'strategy':>10} {'steps':>6} {'train s':>8} {'samples/s':>10} {'acc':>7} {'tta s':>7} "
          f"{'comp ms':>8} {'comm ms':>8} {'wait ms':>8} {'switch@':>8}")
    for r in rows:
        tta_s = f"{r[5]:.1f}" if r[5] is not None else "-"
        print(f"{r[0]:>10} {r[1]:>6} {r[2]:>8.1f} {r[3]:>10.0f} {r[4]:>7.4f} {tta_s:>7} "
              f"{1000 * r[6]:>8.2f} {1000 * r[7]:>8.2f} {1000 * r[8]:>8.2f} {r[9]:>8}")


if __name__ == "__main__":
    main(sys.argv[1])
