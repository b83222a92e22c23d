"""bench/results/compare/summary.json from the `colo compare` runs of issue
24 (steady-state basis, bench/results/compare/steady/): each level's
samples/s and samples per joule, the recommended levels, the agreement with
bench/fusion where the two overlap, and the commands. A level run in a
second device call (`<name>/<level>/summary.json`, e.g. a sequential level
rerun after a fix) replaces the first call's, and says so.

    python3 bench/compare/collect.py bench/results/compare
"""
import json
import os
import sys

RUN = "BUILD_TARGETS='colo fusion_throughput' COMPARE_AGREEMENT=1 COMPARE_TIMEOUT={t} COMPARE_RUNS='{runs}' bench/gpu/run.sh compare"
WORKLOADS = {
    "lenet16": ("colo compare examples/compare/lenet16.toml --steps 4000 --level-timeout 60",
                RUN.format(t=60, runs="lenet16:examples/compare/lenet16.toml:--steps 4000")),
    "resnet18x8": ("colo compare examples/compare/resnet18x8.toml --steps 400 --level-timeout 45",
                   RUN.format(t=45, runs="resnet18x8:examples/compare/resnet18x8.toml:--steps 400")),
    "hetero": ("colo compare examples/compare/hetero.toml --level-timeout 75",
               RUN.format(t=75, runs="hetero:examples/compare/hetero.toml:")
               .replace("COMPARE_AGREEMENT=1 ", "").replace("colo fusion_throughput", "colo")),
    # A sweep of a user-written CNN through colo.fuse (a Python workload).
    "usercnn": ("colo compare examples/compare/user_cnn.py --steps 1000 --level-timeout 60",
                RUN.format(t=60, runs="usercnn:examples/compare/user_cnn.py:--steps 1000")
                .replace("COMPARE_AGREEMENT=1 ", "").replace("colo fusion_throughput", "colo colo_core_module")),
    "torchvision4": ("colo compare examples/compare/torchvision4.toml --level-timeout 75",
                     RUN.format(t=75, runs="torchvision4:examples/compare/torchvision4.toml:")
                     .replace("COMPARE_AGREEMENT=1 ", "").replace("colo fusion_throughput", "colo")),
}


def level_entry(lv):
    if "skipped" in lv:
        return {"skipped": lv["skipped"]}
    entry = {k: lv[k] for k in ("samples_per_s", "samples_per_j", "normalised_throughput", "alone_s_per_j", "failure")
             if k in lv}
    run = (lv.get("runs") or [{}])[0]
    for k in ("train_window", "train_occupancy", "wall_s", "wall_samples_per_s", "stopped_at_budget"):
        if k in run:
            entry[k] = run[k]
    return entry


def workload(d):
    s = json.load(open(os.path.join(d, "summary.json")))
    out = {"basis": s.get("basis"), "levels": {lv["level"]: level_entry(lv) for lv in s["levels"]},
           "ranked_by": [s["recommended_for_throughput"]["measure"], s["recommended_for_energy"]["measure"]],
           "recommended_for_throughput": s["recommended_for_throughput"]["best"],
           "recommended_for_energy": s["recommended_for_energy"]["best"],
           "reasons": [s["recommended_for_throughput"]["reason"], s["recommended_for_energy"]["reason"]]}
    for name in sorted(os.listdir(d)):
        rerun = os.path.join(d, name, "summary.json")
        if os.path.isfile(rerun):
            for lv in json.load(open(rerun))["levels"]:
                if lv["level"] == name:
                    out["levels"][name] = dict(level_entry(lv), source=f"{name}/summary.json (a second device call)")
    agreement = os.path.join(d, "agreement.json")
    if os.path.exists(agreement):
        out["agreement_with_bench_fusion"] = {
            level: round(v["ratio"], 3) for level, v in json.load(open(agreement))["workloads"][os.path.basename(d)]["levels"].items()}
    return out


def main():
    root = sys.argv[1]
    summary = {"gpu": open(os.path.join(root, "steady", "gpu.txt")).read().strip(), "rounds": 1,
               "basis": "training (steady state: colo compare's full-occupancy window)", "workloads": {}}
    for name, (command, device_command) in WORKLOADS.items():
        entry = workload(os.path.join(root, "steady", name))
        entry.update(command=command, device_command=device_command)
        summary["workloads"][name] = entry
    summary["collect_command"] = " ".join(["python3"] + sys.argv)
    with open(os.path.join(root, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for name, w in summary["workloads"].items():
        print(f"{name:>12}: throughput {w['recommended_for_throughput']}, energy {w['recommended_for_energy']}"
              f"  agreement {w.get('agreement_with_bench_fusion', '-')}")


if __name__ == "__main__":
    main()
