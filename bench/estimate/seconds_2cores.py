"""Seconds per colo.estimate on this machine's CPU with 2 threads (issue 50's
target: ResNet-50 at batch 128 within 3 s on 2 cores, every row within 10 s).

Each model is estimated 3 times in one warm process (one small estimate
first, so that no row pays the imports); the median is reported.
Usage: PYTHONPATH=build/python /usr/bin/python3 bench/estimate/seconds_2cores.py OUT.json
"""
import json
import platform
import statistics
import sys
import time

import torch
import torchvision

import colo

ROWS = [("resnet18", 128, "sgd"), ("resnet50", 128, "sgd"), ("mobilenet_v3_large", 128, "adam"),
        ("convnext_tiny", 64, "adamw"), ("vit_b_16", 64, "adamw")]


def main():
    torch.set_num_threads(2)
    colo.estimate(torchvision.models.resnet18(), torch.randn(1, 3, 224, 224), batch_size=8)
    rows = []
    for name, batch, optimizer in ROWS:
        model = getattr(torchvision.models, name)()
        seconds = []
        for _ in range(3):
            start = time.perf_counter()
            estimate = colo.estimate(model, torch.randn(1, 3, 224, 224), batch_size=batch, optimizer=optimizer)
            seconds.append(time.perf_counter() - start)
        rows.append({"model": name, "batch": batch, "optimizer": optimizer, "seconds_median": statistics.median(seconds),
                     "seconds": seconds, "bytes": estimate.bytes})
        print(f"{name:20s} b{batch:<4d} {statistics.median(seconds):6.2f} s  ({', '.join(f'{s:.2f}' for s in seconds)})")
    summary = {"issue": 50, "threads": 2, "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
               "seconds_max": max(r["seconds_median"] for r in rows),
               "resnet50_b128_s": next(r["seconds_median"] for r in rows if r["model"] == "resnet50"),
               "targets": {"resnet50_b128_s": 3, "every_row_s": 10}, "rows": rows,
               "command": "PYTHONPATH=build/python /usr/bin/python3 bench/estimate/seconds_2cores.py OUT.json"}
    with open(sys.argv[1], "w") as out:
        json.dump(summary, out, indent=1)


if __name__ == "__main__":
    main()
