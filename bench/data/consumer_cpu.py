"""What a training process costs the CPU while the GPU is the limit (issue 19).

N jobs train the same model on one GPU from a batch already on the device
(no loader at all), all pinned to the same cores, and each reports its CPU
core-seconds per step. The variants differ only in how the host waits for
the GPU:
  spin        CUDA's default: the host runs ahead until a queue fills
  sleep       cudaDeviceScheduleBlockingSync (colo.data.sleep_while_waiting)
  sleep_log   sleep, and the loss is read every step (a loop that logs it)
  sleep_pace  sleep, and the host waits on an event two steps back
              (blocking event), so it never runs more than two steps ahead
This is the CPU a consumer of a shared loader keeps for itself, which the
producer cannot use for decoding.

  python3 bench/data/consumer_cpu.py --jobs 4 --cores 0-3 --out consumer_cpu.json
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from process_cpu import tree_cpu_s  # noqa: E402
from shared_loading import build_model, run_jobs  # noqa: E402

VARIANTS = ("spin", "sleep", "sleep_log", "sleep_pace")


def job(args):
    import torch
    import torch.nn.functional as F
    import colo.data
    if args.variant != "spin" and not colo.data.sleep_while_waiting("cuda"):
        raise SystemExit("cannot make CUDA waits sleep")
    torch.set_num_threads(1)
    model = build_model(args.model, 10).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, 3, args.size, args.size, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 10, (args.batch,), device="cuda")
    events = []
    start = cpu_start = None
    for step in range(args.steps + 3):
        if step == 3:  # three untimed steps: kernels chosen, memory allocated
            torch.cuda.synchronize()
            start, cpu_start = time.time(), tree_cpu_s(os.getpid())
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.variant == "sleep_log":
            loss.item()
        elif args.variant == "sleep_pace":
            events.append(torch.cuda.Event(blocking=True))
            events[-1].record()
            if len(events) > 2:
                events.pop(0).synchronize()
    torch.cuda.synchronize()
    end = time.time()
    print(json.dumps({"start": start, "end": end, "cpu_core_s": tree_cpu_s(os.getpid()) - cpu_start}), flush=True)


def run_variant(args, variant):
    command = ["taskset", "-c", args.cores, sys.executable, HERE, "job", "--variant", variant, "--model", args.model,
               "--batch", str(args.batch), "--size", str(args.size), "--steps", str(args.steps)]
    results = run_jobs(command + (["--amp"] if args.amp else []), args.jobs, variant)
    span = max(r["end"] for r in results) - min(r["start"] for r in results)
    steps = args.jobs * args.steps
    cpu = sum(r["cpu_core_s"] for r in results)
    return {"variant": variant, "samples_per_s": steps * args.batch / span, "span_s": span,
            "cpu_core_ms_per_step": 1000 * cpu / steps, "cpu_core_ms_per_sample": 1000 * cpu / (steps * args.batch),
            "cores_busy": cpu / span, "jobs": results}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", nargs="?", default="run", choices=("run", "job"))
    parser.add_argument("--variant", choices=VARIANTS, default="sleep")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--cores", default="0-3")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--amp", action="store_true", help="bf16 autocast")
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.mode == "job":
        return job(args)
    rows = [run_variant(args, v) for v in args.variants.split(",")]
    for r in rows:
        print(f"{r['variant']:>10}  {r['samples_per_s']:7.0f} samples/s  {r['cpu_core_ms_per_step']:6.1f} core-ms/step  "
              f"{r['cores_busy']:.2f} cores busy", file=sys.stderr)
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"jobs": args.jobs, "cores": args.cores, "model": args.model, "batch": args.batch,
                       "size": args.size, "steps": args.steps, "amp": args.amp,
                       "command": " ".join([sys.executable] + sys.argv), "variants": rows}, f, indent=1)


if __name__ == "__main__":
    main()
