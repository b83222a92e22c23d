"""colo.report_progress: a Python training loop tells colo's scheduler how
fast it trains, as `colo train` does.

    for step, (x, y) in enumerate(loader):
        ...
        colo.report_progress(samples=(step + 1) * batch_size)

Under `colo run` / colod the job's $COLO_PROGRESS_FILE names a file; the
scheduler reads it and records the job's samples/s, alone and overall, and
its slowdown from sharing a GPU. Outside colo the call does nothing.
A call held back by the rate limit is written at interpreter exit (or by
flush()), so the file ends at the job's last call, not at the write before.
"""
import atexit
import json
import os
import sys
import time

# "pending": the newest call not yet written (path, samples, train_s), or None.
# "together_s": seconds the first call waited for its start-together group.
_state = {"start": None, "last_write": 0.0, "pending": None, "together_s": 0.0}
_flush_at_exit = [False]


def _interval(default):
    try:
        seconds = float(os.environ.get("COLO_PROGRESS_INTERVAL_S", ""))
    except ValueError:
        return default
    return seconds if seconds > 0 else default


def _wait_for_device():
    """Seconds spent waiting for queued CUDA work; 0 when torch has no CUDA in use."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return 0.0
    before = time.monotonic()
    torch.cuda.synchronize()
    return time.monotonic() - before


def _start_together():
    """Joins this process's start-together group, which `colo compare` gives
    the processes of a level it starts all at once ($COLO_START_TOGETHER, a
    directory; $COLO_START_TOGETHER_COUNT of them; at most
    $COLO_START_TOGETHER_TIMEOUT_S seconds, default 120): leaves a file named
    by the pid there and waits until the whole group has. Returns the seconds
    waited; 0 without the variables or when the directory cannot be written."""
    directory = os.environ.get("COLO_START_TOGETHER")
    try:
        count = int(os.environ.get("COLO_START_TOGETHER_COUNT", ""))
    except ValueError:
        return 0.0
    if not directory or count <= 0:
        return 0.0
    # A timeout that is not seconds >= 0 keeps the default, as colo's C++ side does.
    try:
        timeout = float(os.environ.get("COLO_START_TOGETHER_TIMEOUT_S", "120"))
    except ValueError:
        timeout = 120.0
    if not timeout >= 0:
        timeout = 120.0
    try:
        os.makedirs(directory, exist_ok=True)
        open(os.path.join(directory, str(os.getpid())), "w").close()
    except OSError:
        return 0.0
    begin = time.monotonic()
    while time.monotonic() - begin < timeout:
        try:
            if len(os.listdir(directory)) >= count:
                break
        except OSError:
            break
        time.sleep(0.02)
    return time.monotonic() - begin


def _data_wait_s():
    data = sys.modules.get("colo.data")
    return data.data_wait_s() if data is not None else None


def report_progress(samples, train_s=None, interval_s=1.0):
    """Records `samples` trained so far in `train_s` seconds of training
    (default: seconds since the first call), with the time of writing. Writes
    at most once per `interval_s` seconds ($COLO_PROGRESS_INTERVAL_S, set by
    `colo compare`, overrides it; the first call writes at once); a call
    held back keeps its figures for flush(), which runs at interpreter exit,
    so the file ends at the last call. Never raises for a file it cannot
    write. When it writes, it first waits for the CUDA work already queued
    (if torch has CUDA in use), so the figures count what the device has
    done, not what the host has queued; a `train_s` taken on the host
    before the call grows by that wait, as the queued steps it counts
    trained until then (a CUDA-graphed loop runs far ahead of the device).
    Under `colo compare`'s timeslice and mps levels the first call first
    waits until every process of the level has made its first call (at most
    $COLO_START_TOGETHER_TIMEOUT_S), so that they train together; that wait
    is not training time.
    A job that reads through colo.data.SharedLoader also reports the
    seconds it waited for data (`data_wait_s`), which the scheduler keeps
    as the job's data wait."""
    path = os.environ.get("COLO_PROGRESS_FILE")
    if not path:
        return
    interval_s = _interval(interval_s)
    now = time.monotonic()
    if not _flush_at_exit[0]:
        # Registered at the first call, after torch is imported, so it runs
        # before torch's own exit handlers and may still wait for CUDA.
        atexit.register(flush)
        _flush_at_exit[0] = True
    first = _state["start"] is None
    due = first or now - _state["last_write"] >= interval_s
    if first:
        _state["together_s"] = _start_together()
        now = _state["start"] = time.monotonic()
    waited = 0.0
    if due:
        waited = _wait_for_device()
        now = time.monotonic()
    if train_s is None:
        seconds = now - _state["start"]
    else:  # a clock of the caller's that ran through the group's wait, after the first call
        seconds = float(train_s) + waited - (0.0 if first else _state.get("together_s", 0.0))
    _state["pending"] = (path, int(samples), seconds)
    if due:
        _write(_data_wait_s(), now)


def flush():
    """Writes the figures of the last report_progress call if the rate limit
    held them back (their `train_s` is that call's, grown by the time this
    waits for queued CUDA work; `at` and `data_wait_s` are as of this
    write); does nothing when every call is written. Runs at interpreter
    exit, though not when the process is killed or leaves through
    os._exit; a loop may call it where training ends, before evaluation, so
    the scheduler sees the final count sooner. Never raises."""
    if _state.get("pending") is None:
        return
    try:
        path, samples, seconds = _state["pending"]
        _state["pending"] = (path, samples, seconds + _wait_for_device())
        waited = _data_wait_s()
    except Exception:  # noqa: BLE001 -- at exit CUDA or a loader's connection may be gone; the count still matters
        waited = None
    _write(waited, time.monotonic())


def _write(data_wait_s, now):
    """Writes the pending figures as of monotonic `now`; a write that fails
    keeps them pending."""
    path, samples, seconds = _state["pending"]
    try:
        with open(path + ".tmp", "w") as f:
            record = {"samples": samples, "train_s": seconds, "at": time.time()}
            if data_wait_s is not None:
                record["data_wait_s"] = data_wait_s
            json.dump(record, f)
        os.replace(path + ".tmp", path)
    except OSError:
        return  # advisory: progress must not stop training
    _state["last_write"] = now
    _state["pending"] = None
