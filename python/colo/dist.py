"""colo.dist: data-parallel training (`colo dist`) from Python, with its
records as plain lists of dicts.

    run = colo.dist.launch("examples/cluster.toml")
    run["result"]        # result.json: strategy, steps, samples_per_s, time_to_target_s, ...
    run["steps"]         # one record per worker step: rank, step, strategy, loss, compute_s, ...
    run["evaluations"]   # rank 0's test evaluations: step, train_s, test_accuracy, strategy

A cluster spec is the path of a cluster file (docs/cluster-format.md) or the
same tables as a dict, {"model": {...}, "cluster": {"workers": 2}, ...};
colo starts the workers and servers on this host.
"""
import glob
import json
import os
import subprocess
import tempfile

from colo.engine import RunError, colo_executable


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a TOML basic string
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"colo.dist: cannot write {value!r} ({type(value).__name__}) into a cluster file")


def cluster_toml(spec):
    """The TOML text of a cluster spec given as a dict: top-level values,
    then one [table] per dict value and one [[table]] per list of dicts."""
    lines, tables = [], []
    for key, value in spec.items():
        if isinstance(value, dict):
            tables.append((f"[{key}]", value))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            tables.extend((f"[[{key}]]", v) for v in value)
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    for header, table in tables:
        lines.append(header)
        for key, value in table.items():
            if isinstance(value, dict):
                raise TypeError(f"colo.dist: nested table {key!r} under {header}: name it at the top level "
                                f"(e.g. 'simulate' with a 'worker' list)")
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                inner = header.strip("[]")
                for item in value:
                    lines.append(f"[[{inner}.{key}]]")
                    lines.extend(f"{k} = {_toml_value(v)}" for k, v in item.items())
                continue
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


def _read_jsonl(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _failure(lines):
    """What colo dist's stderr says went wrong. When a worker or server
    fails, the launcher's last line only names the process ("colo dist:
    rank 1 (worker 1, pid 42) exited with status 2; stopping ..."); its
    reason is the "colo: error:" line of that process: after the launcher's
    line in the end of its log (ranks >= 1), or before it (rank 0 writes to
    the terminal). Returns the process line and its error, or the last line."""
    ranks = [i for i, line in enumerate(lines) if line.startswith("colo dist: rank ")]
    if not ranks:
        return lines[-1]
    at = ranks[-1]
    errors = [line for line in lines[at + 1:] if line.startswith("colo: error:")]
    errors = errors or [line for line in lines[:at] if line.startswith("colo: error:")]
    return lines[at] + (f" -- {errors[-1]}" if errors else "")


def launch(cluster_spec, out=None, quiet=True, resume=False):
    """Runs `colo dist` on this host for `cluster_spec` (a cluster file's path
    or a dict of its tables) with its output in `out` (default: a new
    temporary directory) and returns {"result", "steps", "evaluations",
    "output"}. `resume` continues from the checkpoint in `out` (cluster
    `checkpoint_steps`), also to train further with a larger `max_steps`;
    "if-any" resumes when there is a checkpoint and starts afresh otherwise. "steps" holds every rank's per-step records in rank then step
    order. Raises FileNotFoundError for a missing file, RunError when the run
    fails (the message holds colo's last line; when a process failed, the
    launcher's line naming it and that process's error), TypeError for a dict colo
    cannot write."""
    out = str(out or tempfile.mkdtemp(prefix="colo-dist-"))
    if isinstance(cluster_spec, dict):
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, "cluster.toml")
        spec = dict(cluster_spec)
        spec.setdefault("output", out)
        with open(path, "w") as f:
            f.write(cluster_toml(spec))
    elif isinstance(cluster_spec, (str, os.PathLike)):
        path = str(cluster_spec)
        if not os.path.exists(path):
            raise FileNotFoundError(f"colo.dist: no cluster file {path}")
    else:
        raise TypeError("colo.dist.launch: cluster_spec must be a cluster file's path or a dict of its tables")
    if resume not in (False, True, "if-any"):
        raise ValueError(f"colo.dist.launch: resume must be False, True or \"if-any\", got {resume!r}")
    flags = {False: [], True: ["--resume"], "if-any": ["--resume-if-any"]}[resume]
    command = [colo_executable(), "dist", path, "--output", out] + flags
    run = subprocess.run(command, capture_output=quiet, text=True)
    if run.returncode != 0:
        lines = (run.stderr or "").strip().splitlines() if quiet else []
        raise RunError(f"colo dist exited with {run.returncode}" + (f": {_failure(lines)}" if lines else ""))
    with open(os.path.join(out, "result.json")) as f:
        result = json.load(f)
    steps = []
    ranks = sorted(glob.glob(os.path.join(out, "steps-rank*.jsonl")),
                   key=lambda p: int(p.rsplit("rank", 1)[1].split(".")[0]))
    for rank_file in ranks:
        steps.extend(_read_jsonl(rank_file))
    return {"result": result, "steps": steps, "evaluations": _read_jsonl(os.path.join(out, "eval.jsonl")),
            "output": out}
