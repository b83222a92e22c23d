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
import sys
import time

_state = {"start": None, "last_write": 0.0}


def _interval(default):
    try:
        seconds = float(os.environ.get("COLO_PROGRESS_INTERVAL_S", ""))
    except ValueError:
        return default
    return seconds if seconds > 0 else default


def _wait_for_device():
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _data_wait_s():
    data = sys.modules.get("colo.data")
    return data.data_wait_s() if data is not None else None


def report_progress(samples, train_s=None, interval_s=1.0):
    """Records `samples` trained so far in `train_s` seconds of training
    (default: seconds since the first call), with the time of writing. Writes
    at most once per `interval_s` seconds ($COLO_PROGRESS_INTERVAL_S, set by
    `colo compare`, overrides it; the first call writes at once); never
    raises for a file it cannot write. When it writes, it first waits for
    the CUDA work already queued (if torch has CUDA in use), so the figures
    count what the device has done, not what the host has queued. A job
    that reads through colo.data.SharedLoader also reports the seconds it
    waited for data (`data_wait_s`), which the scheduler keeps as the job's
    data wait."""
    path = os.environ.get("COLO_PROGRESS_FILE")
    if not path:
        return
    interval_s = _interval(interval_s)
    now = time.monotonic()
    if _state["start"] is None:
        _state["start"] = now
    elif now - _state["last_write"] < interval_s:
        return
    _wait_for_device()
    now = time.monotonic()
    seconds = now - _state["start"] if train_s is None else float(train_s)
    try:
        with open(path + ".tmp", "w") as f:
            record = {"samples": int(samples), "train_s": seconds, "at": time.time()}
            waited = _data_wait_s()
            if waited is not None:
                record["data_wait_s"] = waited
            json.dump(record, f)
        os.replace(path + ".tmp", path)
    except OSError:
        return  # advisory: progress must not stop training
    _state["last_write"] = now
