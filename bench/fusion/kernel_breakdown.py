#!/usr/bin/env python3
"""Per-kernel time of a profiled run: reads Nsight Compute's --csv output
with the gpu__time_duration.sum metric and prints kernels by total time,
with their share, call count and mean duration.

    python3 bench/fusion/kernel_breakdown.py ncu.csv
"""
import csv
import sys
from collections import defaultdict


def main(path):
    rows = []
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(row.get("Metric Unit", "nsecond"), 1e-3)
        rows.append((row["Kernel Name"], value * scale))
    if not rows:
        sys.exit(f"kernel_breakdown: no gpu__time_duration.sum rows in {path}")
    total = defaultdict(float)
    count = defaultdict(int)
    for name, us in rows:
        short = name.split("(")[0][:70]
        total[short] += us
        count[short] += 1
    grand = sum(total.values())
    print(f"{len(rows)} kernels, {grand:.1f} us in all")
    print(f"{'share':>6} {'total us':>10} {'calls':>6} {'mean us':>8}  kernel")
    for name, us in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"{us / grand:>6.1%} {us:>10.1f} {count[name]:>6} {us / count[name]:>8.1f}  {name}")


if __name__ == "__main__":
    main(sys.argv[1])
