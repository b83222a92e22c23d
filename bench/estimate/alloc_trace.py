"""Where a real training step's GPU memory goes: the caching allocator's own
trace of rows of bench/estimate/real_models.py (MODEL:BATCH:OPTIMIZER, two
plain steps) or of bench/estimate/real_training.py (SETUP:MODEL:BATCH:OPTIMIZER,
the set-up's own loop of 4 steps, as its truth runs it), for comparing with
colo's modelled step (COLO_ESTIMATE_TRACE, trace_pair.sh).

    PYTHONPATH=python python3 bench/estimate/alloc_trace.py ROW [...] --out DIR

(the rows' loss is colo.estimate's: the source package is enough, no build).

With --from-start the trace begins before the model is built, so it holds
the parameters' and buffers' allocations as .cuda() makes them
(train_from_event: where training began).

DIR/ROW.json (':' as '_') gets: max allocated/reserved; every cudaMalloc of a
segment (size, bytes allocated at that moment, the op and Python line that
asked); allocations of 8 MiB and more; the bytes live at the peak of
allocation grouped by op and line; `events`, every alloc, free and
segment event as [action, size, address]; and `allocations_by_stream`. A
one-line summary per row goes to stdout. Only the first row's trace is a fresh process's, as the validation's
truth is: later rows find cuBLAS's workspaces and emptied segments of the rows
before, and reserve differently (trace_pair.sh runs one process a row).
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


def plain_loop(model_name, batch, optimizer):
    """Two plain steps of a real_models.py row."""
    return real_models.plain_steps({"model": model_name, "batch": batch, "optimizer": optimizer}, 2)


def setup_loop(setup, model_name, batch, optimizer):
    """The set-up's own loop of a real_training.py row, as its truth runs it."""
    import real_training
    row = next((r for r in real_training.all_rows() if (r["setup"], r["model"], r["batch"], r["optimizer"])
                == (setup, model_name, batch, optimizer)), None)
    if row is None:
        sys.exit(f"alloc_trace.py: no real_training.py row {setup}:{model_name}:{batch}:{optimizer}")
    return real_training.setups.gpu_loop(row, real_training.MODELS)


def trace_row(spec, from_start=False):
    if from_start:  # the model's and the batch's allocations too, as .cuda() makes them
        torch.cuda.memory._record_memory_history(max_entries=400000, stacks=STACKS)
    parts = spec.split(":")
    if len(parts) == 3:
        train = plain_loop(parts[0], int(parts[1]), parts[2])
    elif len(parts) == 4:
        train = setup_loop(parts[0], parts[1], int(parts[2]), parts[3])
    else:
        sys.exit(f"alloc_trace.py: a row is MODEL:BATCH:OPTIMIZER or SETUP:MODEL:BATCH:OPTIMIZER, got {spec!r}")
    train_from = len(torch.cuda.memory._snapshot()["device_traces"][0]) if from_start else 0
    if not from_start:
        torch.cuda.memory._record_memory_history(max_entries=400000, stacks=STACKS)
    train()
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
        "row": spec,
        "max_allocated": torch.cuda.max_memory_allocated(),
        "max_reserved": torch.cuda.max_memory_reserved(),
        "trace_peak_allocated": peak,
        "peak_event": peak_at,
        "event_count": len(events),
        # With --from-start: events before this one built the model and the batch; train() made the rest.
        "train_from_event": train_from,
        "segments": segments,
        "large_allocations": big,
        "live_at_peak_by_line": by_line.most_common(40),
        "events": [[e["action"], e.get("size", 0), e.get("addr", 0)] for e in events],
        # The caching allocator keeps a pool per stream: an allocation on a side stream never takes a
        # block of the main one's (colo's model has one stream). Each stream's allocation count.
        "allocations_by_stream": dict(collections.Counter(str(e.get("stream", 0)) for e in events
                                                          if e["action"] == "alloc")),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", nargs="+", help="MODEL:BATCH:OPTIMIZER or SETUP:MODEL:BATCH:OPTIMIZER")
    parser.add_argument("--out", required=True)
    parser.add_argument("--repeat", type=int, default=1,
                        help="trace each row this many times in this process (ROW.rK.json for K > 1): "
                             "the first is the process's first training, the others run warm")
    parser.add_argument("--from-start", action="store_true",
                        help="record from before the model is built (its .cuda() and the batch), "
                             "train_from_event marking where training began")
    parser.add_argument("--stacks", default="python", choices=("python", "all"),
                        help="'all' names each allocation's ATen op too (slow: minutes a row)")
    args = parser.parse_args()
    global STACKS
    STACKS = args.stacks
    os.makedirs(args.out, exist_ok=True)
    for spec in args.rows:
        for round_ in range(1, args.repeat + 1):
            result = trace_row(spec, args.from_start)
            name = spec.replace(":", "_") + (f".r{round_}" if round_ > 1 else "")
            with open(os.path.join(args.out, name + ".json"), "w") as f:
                json.dump(result, f, indent=1)
            print(json.dumps({key: result[key] for key in ("row", "max_allocated", "max_reserved",
                                                           "trace_peak_allocated")}), flush=True)
            print("  segments:", [(s["size"] >> 20, s["allocated_then"] >> 20, s["at"]) for s in result["segments"]
                                  if s["size"] >= 20 << 20][:25], flush=True)
            del result
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()


if __name__ == "__main__":
    main()
