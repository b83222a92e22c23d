"""bench/results/compare/summary.json from the four `colo compare` runs of
issue 24: each level's samples/s and samples per joule, the recommended
levels and the commands. A workload whose summary.json did not come back
from the GPU machine is read from the table colo compare printed
(table.txt), and says so.

    python3 bench/compare/collect.py bench/results/compare
"""
import json
import os
import re
import sys

COMMANDS = {
    "lenet16": "colo compare examples/compare/lenet16.toml --steps 300 --level-timeout 60",
    "resnet18x8": "colo compare examples/compare/resnet18x8.toml --steps 100 --level-timeout 60",
    "hetero": "colo compare examples/compare/hetero.toml --level-timeout 60",
    "torchvision4": "colo compare examples/compare/torchvision4.toml --level-timeout 60",
}
ROW = re.compile(r"^\s*(sequential|timeslice|mps|slots|scheduler|fused|streams)\s+(\S+)\s+(\S+)")
RECOMMENDED = re.compile(r"^recommended for (throughput|energy)[^:]*: (\w+)(.*)$")


def from_summary(path):
    s = json.load(open(path))
    levels = {}
    for lv in s["levels"]:
        if "skipped" in lv:
            levels[lv["level"]] = {"skipped": lv["skipped"]}
        else:
            levels[lv["level"]] = {k: lv[k] for k in ("samples_per_s", "samples_per_j", "failure") if k in lv}
    return {"levels": levels, "recommended_for_throughput": s["recommended_for_throughput"]["best"],
            "recommended_for_energy": s["recommended_for_energy"]["best"],
            "reasons": [s["recommended_for_throughput"]["reason"], s["recommended_for_energy"]["reason"]],
            "source": "summary.json"}


def from_table(path):
    levels, out = {}, {"source": "table.txt (colo compare's printed table; its summary.json did not come back)"}
    reasons = []
    for line in open(path):
        row = ROW.match(line)
        if row:
            name, per_s, per_j = row.groups()
            levels[name] = ({"skipped": line.split("skipped: ", 1)[1].strip()} if "skipped:" in line else
                            {"samples_per_s": float(per_s), **({"samples_per_j": float(per_j)} if per_j != "-" else {})})
        rec = RECOMMENDED.match(line.strip())
        if rec:
            out["recommended_for_" + rec.group(1)] = rec.group(2)
            reasons.append(line.strip()[len("recommended "):])
    out.update(levels=levels, reasons=reasons)
    return out


def main():
    root = sys.argv[1]
    summary = {"gpu": "one H100 80GB HBM3", "rounds": 1, "workloads": {}}
    for name, command in COMMANDS.items():
        d = os.path.join(root, name)
        s = os.path.join(d, "summary.json")
        entry = from_summary(s) if os.path.exists(s) else from_table(os.path.join(d, "table.txt"))
        entry["command"] = command
        summary["workloads"][name] = entry
    summary["collect_command"] = " ".join(["python3"] + sys.argv)
    with open(os.path.join(root, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for name, w in summary["workloads"].items():
        print(f"{name:>12}: throughput {w['recommended_for_throughput']}, energy {w['recommended_for_energy']}")


if __name__ == "__main__":
    main()
