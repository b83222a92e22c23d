"""Turns a user-trace run's loop into a calibration for make_jobs.py: each
job's training steps per second alone (its steps over its run time alone
less its start-up) and its start-up, as calibrate.py measures them, but from
whole runs of minutes instead of seconds. A job whose start-up the loop did
not measure (`colo train`) gets its steps over its whole run and no start-up,
so the steps it is given fill its run alone.

    python3 calibration_from_run.py SUMMARY_JSON JOBS_JSON OUT_JSON

SUMMARY_JSON is summarise.py's summary.json (per_job: solo_s, startup_s,
peak_mem_bytes); JOBS_JSON the trace's jobs.json (each job's steps)."""
import json
import sys


def calibration(summary, jobs):
    """{job name: {steps, steps_per_s, startup_s, solo_s, peak_mem_bytes}} for
    every job that ran alone and exited 0."""
    steps = {j["name"]: j["steps"] for j in jobs["jobs"]}
    out = {}
    for job in summary["per_job"]:
        name, solo = job["name"], job.get("solo_s")
        if name not in steps or not solo:
            continue
        startup = job.get("startup_s") or 0.0
        if solo <= startup:
            raise ValueError(f"{name}: run alone {solo} s is not longer than its start-up {startup} s")
        out[name] = {"steps": steps[name], "steps_per_s": round(steps[name] / (solo - startup), 4),
                     "startup_s": round(startup, 3), "solo_s": solo, "peak_mem_bytes": job.get("peak_mem_bytes")}
    return out


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    with open(argv[0]) as f:
        summary = json.load(f)
    with open(argv[1]) as f:
        jobs = json.load(f)
    result = calibration(summary, jobs)
    with open(argv[2], "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print(f"{len(result)} jobs -> {argv[2]}")


if __name__ == "__main__":
    main(sys.argv[1:])
