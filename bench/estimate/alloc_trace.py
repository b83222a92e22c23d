"""Where a real training step's GPU memory goes: the caching allocator's own
trace of rows of bench/estimate/real_models.py, for comparing with colo's
modelled step (colo.estimate(..., breakdown)).

    python3 bench/estimate/alloc_trace.py MODEL:BATCH:OPTIMIZER [...] --out DIR

For each row, two training steps are run with the allocator's history on and
DIR/MODEL_BATCH_OPT.json gets: max allocated/reserved; every cudaMalloc of a
segment (size, bytes allocated at that moment, the Python line that asked);
allocations of 8 MiB and more (size, line); and the bytes live at the peak of
allocation grouped by Python line. A one-line summary per row goes to stdout.
"""
import argparse
import collections
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import real_models  # noqa: E402


def where(frames):
    """The ATen op and the innermost Python line that asked for an allocation."""
    op = next((f["name"].split("(")[0] for f in frames
               if "at::_ops::" in f.get("name", "") or "at::native::" in f.get("name", "")), "?")
    line = next((f"{os.path.basename(f['filename'])}:{f.get('line')}" for f in frames
                 if f.get("filename", "").endswith(".py") and "torch/autograd" not in f["filename"]
                 and "torch/_tensor.py" not in f["filename"]), "?")
    return f"{op} @ {line}"


def loss_of(output):
    """colo.estimate's default loss without importing colo: cross entropy against class 0."""
    logits = output.logits if hasattr(output, "logits") else output[0] if isinstance(output, tuple) else output
    logits = logits.reshape(-1, logits.shape[-1])
    return torch.nn.functional.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long,
                                                                 device=logits.device))


def trace_row(model_name, batch, optimizer):
    model, opt, x = real_models.gpu_training({"model": model_name, "batch": batch, "optimizer": optimizer})
    torch.cuda.memory._record_memory_history(max_entries=400000, stacks="all")
    for _ in range(2):
        loss = loss_of(model(x))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    events = snapshot["device_traces"][0]
    live, allocated, peak, peak_at = {}, 0, 0, 0
    segments, big = [], []
    for i, e in enumerate(events):
        action, size = e["action"], e.get("size", 0)
        if action == "alloc":
            live[e["addr"]] = (size, where(e.get("frames", [])))
            allocated += size
            if allocated > peak:
                peak, peak_at = allocated, i
            if size >= 8 << 20:
                big.append({"event": i, "size": size, "at": where(e.get("frames", []))})
        elif action in ("free_completed",):
            if e["addr"] in live:
                allocated -= live.pop(e["addr"])[0]
        elif action == "segment_alloc":
            segments.append({"event": i, "size": size, "allocated_then": allocated,
                             "at": where(e.get("frames", []))})
    # Replay to the peak for what is live there.
    live, by_line = {}, collections.Counter()
    for e in events[:peak_at + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], where(e.get("frames", [])))
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    for size, line in live.values():
        by_line[line] += size
    return {
        "row": f"{model_name}:{batch}:{optimizer}",
        "max_allocated": torch.cuda.max_memory_allocated(),
        "max_reserved": torch.cuda.max_memory_reserved(),
        "trace_peak_allocated": peak,
        "peak_event": peak_at,
        "events": len(events),
        "segments": segments,
        "large_allocations": big,
        "live_at_peak_by_line": by_line.most_common(40),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="+", help="MODEL:BATCH:OPTIMIZER")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for spec in args.rows:
        name, batch, optimizer = spec.split(":")
        result = trace_row(name, int(batch), optimizer)
        with open(os.path.join(args.out, f"{name}_{batch}_{optimizer}.json"), "w") as f:
            json.dump(result, f, indent=1)
        print(json.dumps({k: result[k] for k in ("row", "max_allocated", "max_reserved", "trace_peak_allocated")}),
              flush=True)
        print("  segments:", [(s["size"] >> 20, s["allocated_then"] >> 20, s["at"]) for s in result["segments"]
                              if s["size"] >= 20 << 20][:25], flush=True)
        del result
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


if __name__ == "__main__":
    main()
