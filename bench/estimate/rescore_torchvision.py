"""Re-estimates real_training's torchvision rows (LoRA left out) on this
machine's CPU and writes each row's estimate beside the truth committed in
bench/results/estimate/real_training/rows_h100.jsonl, for a before/after of
an estimator change without a GPU:

    PYTHONPATH=build/python:python python3 bench/estimate/rescore_torchvision.py OUT.json

Estimates come from this machine's torch; summary.json's from the GPU host's,
so only differences between two runs here say what a change did."""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import real_training as rt  # noqa: E402  (beside this file)

ROWS = os.path.join(HERE, "..", "results", "estimate", "real_training", "rows_h100.jsonl")


def main(out):
    truth = {(r["model"], r["setup"], r["batch"]): r for r in map(json.loads, open(ROWS))}
    rows = [r for r in rt.all_rows() if r["library"] == "torchvision" and r["setup"] != "lora"]
    done, began = [], time.time()
    for r in rows:
        key = (r["model"], r["setup"], r["batch"])
        if not truth.get(key, {}).get("truth_bytes"):
            continue
        e = rt.estimate_row(r, 2)
        done.append({"key": key, "colo": e["colo_bytes"], "high": e.get("colo_high_bytes"),
                     "truth": truth[key]["truth_bytes"], "gpu_colo": truth[key]["colo_bytes"]})
    with open(out, "w") as f:
        json.dump(done, f)
    print(f"{len(done)} rows in {time.time() - began:.0f} s -> {out}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
