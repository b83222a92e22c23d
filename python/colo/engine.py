"""colo.train and colo.sweep: the C++ engine (the colo executable) from
Python, with results as plain records (lists of dicts that
pandas.DataFrame takes as they are).

    records = colo.train("examples/quickstart.toml", out="runs/q")
    ranked = colo.sweep("examples/sweep_quickstart.toml")
"""
import json
import os
import shutil
import subprocess
import tempfile


class RunError(RuntimeError):
    """The colo executable failed; the message holds its last output line."""


def colo_executable():
    """The colo binary: $COLO_EXECUTABLE, else the build beside this package, else `colo` on PATH."""
    candidates = [os.environ.get("COLO_EXECUTABLE", ""),
                  os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "colo"),
                  shutil.which("colo") or ""]
    for path in candidates:
        if path and os.access(path, os.X_OK) and not os.path.isdir(path):
            return path
    raise RunError("cannot find the colo executable: set COLO_EXECUTABLE or put build/ on PATH")


def _spec_file(spec):
    if isinstance(spec, (str, os.PathLike)):
        if not os.path.exists(spec):
            raise FileNotFoundError(f"colo: no spec file {spec}")
        return str(spec)
    raise TypeError("colo: spec must be the path of a TOML spec file")


def _run(args, quiet):
    run = subprocess.run([colo_executable()] + args, capture_output=quiet, text=True)
    if run.returncode != 0:
        last = (run.stderr or "").strip().splitlines()[-1:] if quiet else []
        raise RunError(f"colo {args[0]} exited with {run.returncode}" + (f": {last[0]}" if last else ""))


def _read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def train(spec, out=None, device=None, quiet=True):
    """Runs `colo train SPEC` and returns its per-epoch records (metrics.jsonl)."""
    out = out or tempfile.mkdtemp(prefix="colo-train-")
    args = ["train", _spec_file(spec), "--out", str(out)]
    if device:
        args += ["--device", device]
    _run(args, quiet)
    return _read_jsonl(os.path.join(out, "metrics.jsonl"))


def sweep(spec, out=None, device=None, quiet=True):
    """Runs `colo sweep SPEC` (fused arrays) and returns one record per model, ranked as colo ranks
    them (model, array, values, test_accuracy, best_test_accuracy, loss, epochs)."""
    out = out or tempfile.mkdtemp(prefix="colo-sweep-")
    args = ["sweep", _spec_file(spec), "--output", str(out)]
    if device:
        args += ["--device", device]
    _run(args, quiet)
    with open(os.path.join(out, "results.json")) as f:
        return json.load(f)["models"]
