"""Summarises a run of the user trace (run.sh) from its OUT directory into
OUT/summary.json and OUT/README.md (one row per job).

    python3 summarise.py OUT                      # summary.json, README.md
    python3 summarise.py OUT --peaks-out FILE     # peaks measured alone, for make_jobs.py --peaks
    python3 summarise.py OUT --sim-trace FILE     # the loop's measurements as a `colo simulate` trace

Definitions (also in the README):
  loop_s        the loop's jobs' run times added up (process start to exit),
                once every job of the trace has run
  VARIANT_s     wall clock from the `colo run` invocation to its end, over
                every call that ran it; null until it has finished
  speedup_V     loop_s / V_s
  first_start_s the `colo run` invocation to the first job's process start
                (the store's start_s, as the watcher first saw it)
  jobs_lost     jobs of the trace that did not end COMPLETED, over the
                variants run (of a variant cut by a time limit, only those
                that failed or are missing from its store)
  false_ooms    the store's false_ooms column, summed over the variants run
  share_gap     |settled SM share (store's sm_share) - SM activity alone
                (GPM, the loop's timeline over the job's training)|, over
                every (variant, job) that settled; its median; also per
                variant (share_gap_median_VARIANT)
  solo_from     --solo-from: an earlier run's summary.json whose per-job SM
                activity alone stands in for jobs this run's loop did not
                run, in share_gap only (loop_s and every ratio stay this
                run's own: null without its loop)
  unseen_shares_VARIANT  jobs colo could not see settle (`settled unseen`
                in its log: a full GPU, no rise, no neighbour slowed):
                no share recorded, so not in share_gap
  sim_error_pct (colo simulate's magm/MPS total - model_s) / model_s
  sim_opaque_error_pct  the same for opaque_s, from the trace without
                memory estimates simulated with --provisional-memory
"""
import argparse
import csv
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import store  # noqa: E402  (beside this file)

VARIANTS = ("model", "opaque", "declared")
# A variant also run with `colo run --no-probe-alone` (run.sh): VARIANT_rise;
# VARIANT_probe, of runs before probing alone became colo's default.
OTHER_RULES = tuple(f"{v}_{rule}" for v in VARIANTS for rule in ("rise", "probe"))
# The model variant's jobs run again from an earlier run's measurements (run.sh model_again).
AGAIN = ("model_again",)


def variants_in(out):
    """The three variants, and those of them also run under the other share rule or again in `out`."""
    return VARIANTS + tuple(v for v in OTHER_RULES + AGAIN if os.path.isdir(os.path.join(out, v)))


def unseen_settlements(variant_dir):
    """Jobs whose share colo could not see (`settled unseen` in the run logs)."""
    count = 0
    for log in glob.glob(os.path.join(variant_dir, "run_*.txt")):
        with open(log, errors="replace") as f:
            count += sum(" settled unseen:" in line for line in f)
    return count


def read_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def read_jsonl(path):
    try:
        return [json.loads(line) for line in open(path) if line.strip()]
    except OSError:
        return []


def final_line(path):
    """The last line of a job's log that is its final JSON (common.TrainingClock)."""
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.startswith("{") and '"train_s"' in line:
            try:
                return json.loads(line)
            except ValueError:
                pass
    return None


def colo_train_line(run_dir):
    """A `colo train` run's figures in the scripts' final-line form, from its metrics.jsonl."""
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return None
    records = [json.loads(line) for line in open(path) if line.strip()]
    if not records:
        return None
    return {"steps": records[-1].get("step"), "train_s": sum(r.get("epoch_s", 0) for r in records),
            "peak_mem_bytes": max((r.get("peak_mem_bytes") or 0) for r in records) or None}


def part_tag(part):
    """The file-name tag of a LOOP_PART ("2/4" -> "part2of4_"); "" for a whole loop."""
    return f"part{part.replace('/', 'of')}_" if part and part != "1/1" else ""


def timeline(out, part=None):
    """The `colo monitor` samples of the loop (of its LOOP_PART `part`, which
    ran on its own GPU), every call's, in time order."""
    tag = part_tag(part)
    pattern = f"timeline_{tag}*.csv" if tag else "timeline_[0-9]*.csv"
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "loop", pattern))):
        rows += list(csv.DictReader(open(path)))
    return sorted(rows, key=lambda r: float(r["unix_s"]))


def mean_activity(rows, t0, t1):
    """Mean SM activity (GPM; NVML's utilisation where GPM is not read) in [t0, t1]."""
    values = []
    for r in rows:
        if t0 <= float(r["unix_s"]) <= t1:
            value = r.get("sm_active") or r.get("gpu_util")
            if value:
                values.append(float(value))
    return statistics.mean(values) if values else None


def loop_jobs(out, trace):
    """Per job of the trace that ran in the loop: times, energy, its final
    line, its SM activity alone over its training and its memory as the
    device showed it (above the idle floor)."""
    parts = {}  # LOOP_PART -> (its GPU's samples, their idle memory floor)
    records = {}
    for line in open(os.path.join(out, "loop", "jobs.jsonl")) if os.path.exists(
            os.path.join(out, "loop", "jobs.jsonl")) else []:
        rec = json.loads(line)
        records[rec["name"]] = rec
    result = {}
    for job in trace:
        rec = records.get(job["name"])
        if rec is None:
            continue
        t0, t1 = rec["start_unix_s"], rec["end_unix_s"]
        part = rec.get("part")
        if part not in parts:
            rows = timeline(out, part)
            parts[part] = (rows, min((int(r["mem_used_bytes"]) for r in rows), default=0))
        rows, floor = parts[part]
        final = (colo_train_line(os.path.join(out, "runs", "loop", job["name"])) if job["colo_train"]
                 else final_line(os.path.join(out, "loop", "logs", job["name"] + ".log")))
        if final and final.get("startup_s") is not None:
            window = (t0 + final["startup_s"], t0 + final["startup_s"] + final["train_s"])
        elif final and final.get("train_s"):
            window = (max(t0, t1 - final["train_s"] - 0.5), t1 - 0.5)
        else:
            window = (t0 + 0.25 * (t1 - t0), t1)
        used = [int(r["mem_used_bytes"]) for r in rows if t0 <= float(r["unix_s"]) <= t1]
        energy = (rec["energy_end_j"] - rec["energy_start_j"]
                  if rec.get("energy_start_j") is not None and rec.get("energy_end_j") is not None else None)
        result[job["name"]] = {
            "solo_s": t1 - t0, "exit": rec["exit"], "energy_j": energy, "final": final,
            "startup_s": final.get("startup_s") if final else None,
            "solo_sm_activity": mean_activity(rows, *window),
            # Over the whole run, start-up included: the constant activity that
            # `colo simulate` holds a job at for its whole duration.
            "run_sm_activity": mean_activity(rows, t0, t1),
            "device_mem_bytes": max(used) - floor if used else None}
    return result


def variant_run(out, v, trace):
    """A variant's wall time, energy, first start and store rows, or None if never run."""
    d = os.path.join(out, v)
    segments = [read_json(p) for p in sorted(glob.glob(os.path.join(d, "segment_*.json")),
                                             key=lambda p: int(p.rsplit("_", 1)[1].split(".")[0]))]
    segments = [s for s in segments if s]
    if not segments:
        return None
    wall = sum(s["ended_unix_s"] - s["invoked_unix_s"] for s in segments)
    energies = [(s["energy_end_j"], s["energy_start_j"]) for s in segments]
    energy = (sum(e1 - e0 for e1, e0 in energies) if all(e is not None for pair in energies for e in pair)
              else None)
    first = read_json(os.path.join(d, "first_start_0.json"), {}).get("first_start_unix_s")
    try:
        rows = {r["name"]: r for r in store.rows(os.path.join(d, "jobs.db"))}
    except Exception as e:  # noqa: BLE001 -- a store that cannot be read is reported, not fatal
        print(f"{v}: store not readable: {e}", file=sys.stderr)
        rows = {}
    done = os.path.exists(os.path.join(d, "done"))
    states = {}
    for job in trace:
        state = rows.get(job["name"], {}).get("state", "MISSING")
        states[state] = states.get(state, 0) + 1
    has_false_ooms = any("false_ooms" in r for r in rows.values())
    return {"wall_s": wall if done else None, "wall_so_far_s": wall, "calls": len(segments), "finished": done,
            "energy_j": energy if done else None,
            "first_start_s": first - segments[0]["invoked_unix_s"] if first else None,
            # A run cut by the benchmark's time limit left its pending and running jobs
            # queued in the store (colo run --store goes on): not lost.
            "states": states, "jobs_lost": sum(n for s, n in states.items()
                                               if s != "COMPLETED" and (done or s not in ("PENDING", "RUNNING", "REQUEUED"))),
            "false_ooms": sum(r.get("false_ooms") or 0 for r in rows.values()) if has_false_ooms else None,
            "oom_deaths": sum(r.get("oom_deaths") or 0 for r in rows.values()),
            "most_jobs_at_once": most_at_once(rows.values()),
            **device_figures([r for p in sorted(glob.glob(os.path.join(d, "timeline_*.csv")))
                              for r in csv.DictReader(open(p))]),
            "rows": rows}


def device_figures(rows):
    """Mean SM activity (GPM, else NVML utilisation), mean power and peak memory of `colo monitor` samples."""
    act = [float(r.get("sm_active") or r.get("gpu_util")) for r in rows if r.get("sm_active") or r.get("gpu_util")]
    power = [float(r["power_w"]) for r in rows if r.get("power_w")]
    mem = [int(r["mem_used_bytes"]) for r in rows if r.get("mem_used_bytes")]
    return {"sm_active_mean": statistics.mean(act) if act else None,
            "power_w_mean": statistics.mean(power) if power else None,
            "mem_used_peak_bytes": max(mem) if mem else None}


def most_at_once(records):
    """The most jobs that ran at the same time, from records with start_s and
    end_s (a store's rows: their last attempts; a simulation's jobs_*.jsonl);
    one without both is left out."""
    ran = [r for r in records if r.get("start_s") is not None and r.get("end_s") is not None]
    events = sorted([(r["start_s"], 1) for r in ran] + [(r["end_s"], -1) for r in ran])
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def ratio(a, b):
    return a / b if a is not None and b else None


def rounded(x, digits=3):
    return round(x, digits) if isinstance(x, float) else x


def earlier_activity(summary_path):
    """{job: SM activity alone} from an earlier run's summary.json (its per_job)."""
    if not summary_path:
        return {}
    rows = read_json(summary_path, {}).get("per_job", [])
    if not rows:
        sys.exit(f"{summary_path}: no per_job rows to take SM activity alone from")
    return {r["name"]: r["solo_sm_activity"] for r in rows if r.get("solo_sm_activity") is not None}


def summarise(out, trace, commands, solo_from=None):
    variants = variants_in(out)
    solo = loop_jobs(out, trace)
    activity_before = earlier_activity(solo_from)
    loop_done = len(solo) == len(trace)
    loop_s = sum(j["solo_s"] for j in solo.values()) if loop_done else None
    loop_energy = (sum(j["energy_j"] for j in solo.values())
                   if loop_done and all(j["energy_j"] is not None for j in solo.values()) else None)
    runs = {v: variant_run(out, v, trace) for v in variants}
    gaps, per_job = [], []
    gaps_of = {v: [] for v in variants}
    for job in trace:
        name, alone = job["name"], solo.get(job["name"], {})
        activity_alone = alone.get("solo_sm_activity", activity_before.get(name))
        row = {"name": name, "solo_s": alone.get("solo_s"), "startup_s": alone.get("startup_s"),
               "solo_sm_activity": activity_alone,
               "solo_sm_activity_earlier": "solo_sm_activity" not in alone and activity_alone is not None,
               "peak_mem_bytes": (alone.get("final") or {}).get(
                   "peak_mem_bytes"), "device_mem_bytes": alone.get("device_mem_bytes")}
        for v, run in runs.items():
            r = (run or {}).get("rows", {}).get(name, {})
            exec_s = r["end_s"] - r["start_s"] if r.get("end_s") and r.get("start_s") else None
            row[f"{v}_state"] = r.get("state")
            row[f"{v}_slowdown"] = ratio(exec_s, alone.get("solo_s")) if r.get("state") == "COMPLETED" else None
            row[f"{v}_sm_share"] = r.get("sm_share")
            if r.get("sm_share") is not None and activity_alone is not None:
                gaps.append(abs(r["sm_share"] - activity_alone))
                gaps_of[v].append(gaps[-1])
        per_job.append(row)
    sim = [s for s in read_json(os.path.join(out, "sim", "summary.json"), []) if s.get("policy") == "magm"]
    sim_opaque = [s for s in read_json(os.path.join(out, "sim", "opaque", "summary.json"), [])
                  if s.get("policy") == "magm"]
    opaque_s = (runs["opaque"] or {}).get("wall_s")
    model_s = (runs["model"] or {}).get("wall_s")
    ran = [r for r in runs.values() if r]
    summary = {
        "issue": 49,
        "trace": read_json(os.path.join(out, "trace", "jobs.json"), {}).get("what"),
        "gpu": open(os.path.join(out, "gpu.txt")).read().strip() if os.path.exists(os.path.join(out, "gpu.txt")) else None,
        "jobs": len(trace),
        "loop_jobs_done": len(solo),
        "loop_failed": [n for n, j in solo.items() if j["exit"] != 0],
        "loop_s": loop_s,
        "loop_energy_j": loop_energy,
        **{f"{v}_s": (runs[v] or {}).get("wall_s") for v in variants},
        **{f"speedup_{v}": ratio(loop_s, (runs[v] or {}).get("wall_s")) for v in variants},
        "energy_saved_model_pct": (100 * (1 - runs["model"]["energy_j"] / loop_energy)
                                   if runs["model"] and runs["model"]["energy_j"] is not None and loop_energy
                                   else None),
        "first_start_s_max": max((r["first_start_s"] for r in ran if r["first_start_s"] is not None), default=None),
        "jobs_lost": sum(r["jobs_lost"] for r in ran) if ran else None,
        "false_ooms": (sum(r["false_ooms"] for r in ran if r["false_ooms"] is not None)
                       if any(r["false_ooms"] is not None for r in ran) else None),
        "share_gap_median": statistics.median(gaps) if gaps else None,
        # The loop's GPUs while it ran (every part's samples): at this mean SM
        # activity, packing its jobs perfectly onto one GPU to 100% gives at
        # most 1 / mean the loop's speed.
        **{f"loop_{k}": x for k, x in device_figures(
            [r for part in {j.get("part") for j in read_jsonl(os.path.join(out, "loop", "jobs.jsonl"))}
             for r in timeline(out, part)]).items()},
        "share_gap_jobs": len(gaps),
        "solo_from": solo_from,
        **{f"share_gap_median_{v}": statistics.median(g) if g else None for v, g in gaps_of.items()},
        **{f"share_gap_jobs_{v}": len(g) for v, g in gaps_of.items()},
        **{f"unseen_shares_{v}": unseen_settlements(os.path.join(out, v)) for v in variants if runs[v]},
        "sim_error_pct": 100 * (sim[0]["total_s"] - model_s) / model_s if sim and model_s else None,
        "sim_s": sim[0]["total_s"] if sim else None,
        "sim_opaque_error_pct": (100 * (sim_opaque[0]["total_s"] - opaque_s) / opaque_s
                                 if sim_opaque and opaque_s else None),
        "sim_opaque_s": sim_opaque[0]["total_s"] if sim_opaque else None,
        "startup_over_25pct": [j["name"] for j in per_job
                               if j["startup_s"] is not None and j["solo_s"] and j["startup_s"] > 0.25 * j["solo_s"]],
        "solo_outside_60_300s": [j["name"] for j in per_job if j["solo_s"] and not 60 <= j["solo_s"] <= 300],
        "variants": {v: ({k: rounded(x) for k, x in r.items() if k != "rows"} if r else None) for v, r in runs.items()},
        "per_job": [{k: rounded(x) for k, x in j.items()} for j in per_job],
        "commands": commands,
    }
    return {k: rounded(v) for k, v in summary.items()}


def cell(x, fmt):
    return format(x, fmt) if isinstance(x, (int, float)) else "-"


def readme(summary):
    variants = list(summary["variants"])
    lines = ["# User trace (issue 49): one run", "",
             f"Trace: {summary['trace']}. GPU: {summary['gpu']}.", "",
             "| | loop | " + " | ".join(variants) + " |", "| --- | --- |" + " --- |" * len(variants),
             "| wall s | " + " | ".join(cell(summary[k], ".1f") for k in ["loop_s"] + [f"{v}_s" for v in variants])
             + " |",
             "| speedup | 1 | " + " | ".join(cell(summary[f"speedup_{v}"], ".2f") for v in variants) + " |",
             "| first start s | - | " + " | ".join(
                 cell((summary["variants"][v] or {}).get("first_start_s"), ".1f") for v in variants) + " |",
             "| not completed | - | " + " | ".join(
                 cell((summary["variants"][v] or {}).get("jobs_lost"), "d") for v in variants) + " |", "",
             f"Energy saved (model): {cell(summary['energy_saved_model_pct'], '.1f')}%; false OOMs: "
             f"{summary['false_ooms']}; median |settled share - SM activity alone|: "
             f"{cell(summary['share_gap_median'], '.3f')} over {summary['share_gap_jobs']} settled jobs "
             f"(unseen, left out: " + ", ".join(f"{v} {summary[f'unseen_shares_{v}']}" for v in variants
                                                if f"unseen_shares_{v}" in summary) + "); "
             f"simulation error: {cell(summary['sim_error_pct'], '.1f')}%.", "",
             "Per job: run time alone (loop), start-up, slowdown in each variant (its run time there over alone), "
             f"settled SM share ({' / '.join(variants)}; - where predicted, declared, unseen or not measured), "
             "SM activity alone.", "",
             "| job | alone s | start-up s | " + " | ".join(f"{v} x" for v in variants) + " | settled share | SM alone |",
             "| --- | --- | --- |" + " --- |" * len(variants) + " --- | --- |"]
    for j in summary["per_job"]:
        shares = " / ".join(cell(j[f"{v}_sm_share"], ".2f") for v in variants)
        lines.append(f"| {j['name']} | {cell(j['solo_s'], '.1f')} | {cell(j['startup_s'], '.1f')} | "
                     + " | ".join(cell(j[f"{v}_slowdown"], ".2f") for v in variants)
                     + f" | {shares} | {cell(j['solo_sm_activity'], '.2f')} |")
    lines += ["", "Commands:", "", "```"] + summary["commands"] + ["```", ""]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--peaks-out", help="write {job: peak bytes} measured alone (the final lines' peak) and exit")
    p.add_argument("--sim-trace", help="write the loop's measurements as a colo simulate trace CSV and exit")
    p.add_argument("--solo-from", help="an earlier run's summary.json: SM activity alone for the share gap of "
                                       "jobs this run's loop did not run")
    args = p.parse_args()
    trace = read_json(os.path.join(args.out, "trace", "jobs.json"), {}).get("jobs", [])
    if not trace:
        sys.exit(f"{args.out}/trace/jobs.json: no trace (run make_jobs.py, or run.sh, first)")
    if args.peaks_out:
        solo = loop_jobs(args.out, trace)
        peaks = {n: j["final"]["peak_mem_bytes"] for n, j in solo.items() if j["final"] and j["final"].get("peak_mem_bytes")}
        json.dump(peaks, open(args.peaks_out, "w"), indent=1)
        print(f"{args.peaks_out}: peaks of {len(peaks)} of {len(trace)} jobs", file=sys.stderr)
        return
    if args.sim_trace:
        solo = loop_jobs(args.out, trace)
        if len(solo) < len(trace):
            sys.exit(f"the loop has run {len(solo)} of {len(trace)} jobs: no simulation yet")
        # Beside it, trace_opaque.csv: the same jobs with no memory estimate (the opaque variant).
        opaque_path = os.path.join(os.path.dirname(os.path.abspath(args.sim_trace)), "trace_opaque.csv")
        with open(args.sim_trace, "w") as f, open(opaque_path, "w") as opaque:
            head = "submit_s,name,duration_s,mem_bytes,sm_activity,mem_estimate_bytes,priority,gpus,startup_s,"
            f.write(head + "workload,command\n")
            opaque.write(head + "command\n")
            for job in trace:
                s = solo[job["name"]]
                mem = s["device_mem_bytes"] or (s["final"] or {}).get("peak_mem_bytes") or 0
                # The scheduler knows each job's memory (the model variant's estimates), not its share.
                # Each job starts up (no SM activity) for its measured start-up, then trains at its
                # activity over training; where either is unknown, no start-up and its mean over
                # the whole run.
                startup = s["startup_s"] if s.get("startup_s") is not None and s["startup_s"] < s["solo_s"] else 0
                activity = (s["solo_sm_activity"] if startup and s["solo_sm_activity"] is not None
                            else s["run_sm_activity"] or s["solo_sm_activity"] or 0.5)
                common = f"{s['solo_s']:.2f},{mem},{activity:.3f}"
                # Jobs of one [job.model] table are one workload to the runner (a share measured for
                # one is predicted for the others); jobs without one only by their command.
                workload = json.dumps(job["model"], sort_keys=True) if job.get("model") else ""
                workload = '"' + workload.replace('"', '""') + '"' if workload else ""
                f.write(f"0,{job['name']},{common},{mem},0,1,{startup:.2f},{workload},{job['command']}\n")
                opaque.write(f"0,{job['name']},{common},,0,1,{startup:.2f},{job['command']}\n")
        return
    commands_path = os.path.join(args.out, "commands.txt")
    commands = open(commands_path).read().splitlines() if os.path.exists(commands_path) else []
    summary = summarise(args.out, trace, commands, args.solo_from)
    json.dump(summary, open(os.path.join(args.out, "summary.json"), "w"), indent=1)
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(readme(summary))
    for key in ("jobs", "loop_s", "model_s", "opaque_s", "declared_s", "speedup_model", "speedup_opaque",
                "speedup_declared", "energy_saved_model_pct", "first_start_s_max", "jobs_lost", "false_ooms",
                "share_gap_median", "sim_error_pct"):
        print(f"{key}: {summary[key]}")


if __name__ == "__main__":
    main()
