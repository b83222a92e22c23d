"""How much a real_training row's reserved peak moves between fresh processes
running the same loop, and what moves it: for telling an estimator's error
from the truth's own spread (issue 50).

    PYTHONPATH=python python3 bench/estimate/reserved_spread.py ROW [...] --repeats 2 --parallel 8 --out OUT.jsonl

A ROW is SETUP:MODEL:BATCH:OPT of real_training.py. Each row runs in fresh
processes, `parallel` at once on the GPU, in three ways:
  - plain: the row's loop (setups.gpu_loop), nothing else in the process;
  - sampler: as the validation's truth runs it (setups.truth: a thread polls
    nvidia-smi every 0.2 s);
  - gc_off: the plain loop with Python's cyclic garbage collector disabled.
One JSON line per process: the row, the way, the allocator's reserved and
allocated peaks, and the cyclic collections that ran during the loop with
the objects each freed."""
import argparse
import concurrent.futures
import gc
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WAYS = ("plain", "sampler", "gc_off")


def child(spec, way):
    sys.path.insert(0, HERE)
    import torch
    import real_training
    import setups
    setup, model, batch, opt = spec.split(":")
    row = next(r for r in real_training.all_rows()
               if (r["setup"], r["model"], r["batch"], r["optimizer"]) == (setup, model, int(batch), opt))
    collections = []
    gc.callbacks.append(lambda phase, info: phase == "stop" and collections.append(info["collected"]))
    if way == "sampler":
        real_training.setups.print_truth(setups.gpu_loop(row, real_training.MODELS))
        print(json.dumps({"gc_runs": len(collections), "gc_collected": sum(collections)}))
        return
    train = setups.gpu_loop(row, real_training.MODELS)
    if way == "gc_off":
        gc.disable()
    train()
    torch.cuda.synchronize()
    print(json.dumps({"max_reserved": torch.cuda.max_memory_reserved(),
                      "max_allocated": torch.cuda.max_memory_allocated(),
                      "gc_runs": len(collections), "gc_collected": sum(collections)}))


def one(spec, way):
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", spec, way],
                         capture_output=True, text=True)
    record = {}
    for line in out.stdout.splitlines():  # print_truth's line, then the collections'
        try:
            record.update(json.loads(line))
        except ValueError:
            pass
    if "max_reserved" not in record:
        record["error"] = out.stderr[-400:]
    return dict(record, row=spec, way=way)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--out", required=False)
    parser.add_argument("--child", nargs=2, metavar=("ROW", "WAY"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    jobs = [(spec, way) for _ in range(args.repeats) for spec in args.rows for way in WAYS]
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool, open(args.out, "w") as out:
        for record in pool.map(lambda job: one(*job), jobs):
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(record["row"], record["way"], record.get("max_reserved", 0) >> 20, "MiB reserved",
                  record.get("gc_runs", ""), record.get("gc_collected", ""), record.get("error", "")[-200:],
                  flush=True)


if __name__ == "__main__":
    main()
