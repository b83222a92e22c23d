"""Reads a colo job store (SQLite, src/colo/sched/store.cpp) with Python's
sqlite3 module: the GPU machine has no sqlite3 program. Read-only, so it can
watch a store while `colo run` writes it.

Columns relied on, of table `jobs`: spec (JSON; its "name"), state, start_s
and end_s (Unix seconds, of the last attempt), attempts, oom_deaths,
false_ooms, sm_share (the share measured when the job settled; NULL when it
was declared, predicted or never measured), peak_mem_bytes, samples_per_s,
alone_samples_per_s. A column a store lacks reads as None.

    python3 store.py watch DB --label model --first-start FILE   # progress lines until killed
    python3 store.py rows DB                                    # the rows as JSON
"""
import argparse
import json
import sqlite3
import sys
import time

FINAL = {"COMPLETED", "FAILED", "CANCELLED"}


def rows(db):
    """Every job of the store as a dict (columns, plus "name"), by id."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        con.row_factory = sqlite3.Row
        out = []
        for r in con.execute("SELECT * FROM jobs ORDER BY id"):
            row = dict(r)
            row["name"] = json.loads(row["spec"]).get("name", "")
            out.append(row)
        return out
    finally:
        con.close()


def watch(db, label, first_start_path, interval_s):
    """Prints a progress line every interval_s; writes the first start time
    (Unix s) seen in the store to first_start_path once there is one. Jobs
    retried start again, so only the first sighting is kept."""
    began, last_print, first = time.time(), 0.0, None
    while True:
        try:
            jobs = rows(db)
        except sqlite3.Error:
            jobs = []  # not created yet: colo run is still estimating
        starts = [j["start_s"] for j in jobs if j.get("start_s")]
        if first is None and starts:
            first = min(starts)
            with open(first_start_path, "w") as f:
                json.dump({"first_start_unix_s": first}, f)
        if time.time() - last_print >= interval_s:
            last_print = time.time()
            states = {}
            for j in jobs:
                states[j["state"]] = states.get(j["state"], 0) + 1
            text = ", ".join(f"{n} {s.lower()}" for s, n in sorted(states.items())) or "no job submitted yet"
            print(f"[{label} +{time.time() - began:.0f} s] {text}", flush=True)
        time.sleep(1.0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    w = sub.add_parser("watch")
    w.add_argument("db")
    w.add_argument("--label", default="colo")
    w.add_argument("--first-start", required=True)
    w.add_argument("--interval", type=float, default=30.0)
    r = sub.add_parser("rows")
    r.add_argument("db")
    args = p.parse_args()
    if args.what == "watch":
        watch(args.db, args.label, args.first_start, args.interval)
    else:
        json.dump(rows(args.db), sys.stdout, indent=1)


if __name__ == "__main__":
    main()
