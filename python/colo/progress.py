"""colo.report_progress: a Python training loop tells colo's scheduler how
fast it trains, as `colo train` does.

    for step, (x, y) in enumerate(loader):
        ...
        colo.report_progress(samples=(step + 1) * batch_size)

Under `colo run` / colod the job's $COLO_PROGRESS_FILE names a file; the
scheduler reads it and records the job's samples/s, alone and overall, and
its slowdown from sharing a GPU. Outside colo the call does nothing.
"""
import json
import os
import time

_state = {"start": None, "last_write": 0.0}


def report_progress(samples, train_s=None, interval_s=1.0):
    """Records `samples` trained so far in `train_s` seconds of training
    (default: seconds since the first call). Writes at most once per
    `interval_s` seconds (the first call at once); never raises for a file it
    cannot write."""
    path = os.environ.get("COLO_PROGRESS_FILE")
    if not path:
        return
    now = time.monotonic()
    if _state["start"] is None:
        _state["start"] = now
        _state["last_write"] = now - interval_s
    if now - _state["last_write"] < interval_s:
        return
    seconds = now - _state["start"] if train_s is None else float(train_s)
    try:
        with open(path + ".tmp", "w") as f:
            json.dump({"samples": int(samples), "train_s": seconds}, f)
        os.replace(path + ".tmp", path)
    except OSError:
        return  # advisory: progress must not stop training
    _state["last_write"] = now
