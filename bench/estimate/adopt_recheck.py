"""Makes a GPU host's recheck of both cards (bench/gpu/run.sh recheckboth) the
committed real_training results: each card's rows.jsonl replaces
rows_CARD.jsonl (every row keeping the first GPU run's own estimate,
gpu_run_colo_bytes, and checked to carry the same truth), summary.json is
made again by real_training.py summarize, with h200_profile_on_h100_truth
(the H200 rows' estimates against the H100's truth); the keys written by
hand (truth_note, previous_estimates, peers, torch, the first two
device_command entries) are kept; `estimates` and the newest device command
come from the arguments.

    python3 bench/estimate/adopt_recheck.py DIR --tree SHA --call "what ran, where" --estimates "what changed"

DIR holds recheck_h100/rows.jsonl and recheck_h200/rows.jsonl (the tarball
of run.sh recheckboth, unpacked)."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "..", "results", "estimate", "real_training")
CARDS = {"h100": "NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB", "h200": "NVIDIA H200, 580.159.04, 143771 MiB"}
KEPT = ("truth_note", "previous_estimates", "peers", "torch")


def key(row):
    return row["setup"], row["model"], row["batch"], row["optimizer"]


def adopt_rows(new_path, card):
    """Replaces rows_CARD.jsonl by `new_path`'s rows; exits naming a row whose truth differs."""
    committed = os.path.join(RESULTS, f"rows_{card}.jsonl")
    old = {key(r): r for r in map(json.loads, open(committed))}
    rows = [json.loads(line) for line in open(new_path) if line.strip()]
    if {key(r) for r in rows} != set(old):
        sys.exit(f"adopt_recheck.py: {new_path} has other rows than {committed}")
    for r in rows:
        before = old[key(r)]
        if r["truth_bytes"] != before["truth_bytes"]:
            sys.exit(f"adopt_recheck.py: {' '.join(map(str, key(r)))}: truth {r['truth_bytes']} here, "
                     f"{before['truth_bytes']} committed")
        r["gpu_run_colo_bytes"] = before["gpu_run_colo_bytes"]
        r["gpu_run_colo_high_bytes"] = before["gpu_run_colo_high_bytes"]
    with open(committed, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return committed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir")
    parser.add_argument("--tree", required=True, help="the commit the estimates were made at")
    parser.add_argument("--call", required=True, help="the device call: date, kind, card, command")
    parser.add_argument("--estimates", required=True, help="what made these estimates and what changed since")
    args = parser.parse_args()
    paths = {card: adopt_rows(os.path.join(args.dir, f"recheck_{card}", "rows.jsonl"), card) for card in CARDS}
    summary_path = os.path.join(RESULTS, "summary.json")
    old = json.load(open(summary_path))
    paths = {card: os.path.relpath(path) for card, path in paths.items()}
    command = [sys.executable, os.path.relpath(os.path.join(HERE, "real_training.py")), "summarize", paths["h100"],
               paths["h200"], "--out", os.path.relpath(RESULTS), "--command", "bench/gpu/run.sh recheckboth", "--seconds", paths["h100"],
               "--seconds-machine", "8 estimates at once, 2 threads each, on the 16 CPUs of the GPU host"]
    for card in CARDS:
        command += ["--gpu", CARDS[card]]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    summary = json.load(open(summary_path))
    summary.update({k: old[k] for k in KEPT if k in old})
    summary["estimates"] = f"colo.estimate at tree {args.tree}: {args.estimates}"
    summary["device_command"] = old.get("device_command", [])[:2] + [args.call]
    sys.path.insert(0, HERE)
    import real_training  # torch and the models' libraries: only here, once the files are written
    truth = {key(r): r["truth_bytes"] for r in map(json.loads, open(paths["h100"]))}
    crossed = [dict(r, truth_bytes=truth[key(r)]) for r in map(json.loads, open(paths["h200"]))]
    summary["h200_profile_on_h100_truth"] = dict(
        what="the H200 rows' estimates (its own profile) against the H100's truth: what an H100 would gain from "
             "the H200's measured tables, an inference across two sm90 cards, not an H100 measurement",
        **{k: v for k, v in real_training.accuracy(crossed).items() if k != "under5_rows"})
    json.dump(summary, open(summary_path, "w"), indent=1)
    for card, name in CARDS.items():
        figures = summary["gpus"][name]
        print(f"{card}: median {figures['median_pct']}%, p95 {figures['p95_pct']}%, under by >5% "
              f"{figures['under5_pct']}% (bytes_high {figures['under5_high_pct']}%)")


if __name__ == "__main__":
    main()
