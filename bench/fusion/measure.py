"""What colo's fusion benchmarks share: a timed window of training steps, one
measurement in its own process, N single-model processes at once under a
private MPS daemon, and the GPU memory a run takes as NVML sees it."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import torch


def timed(step, seconds, warmup):
    """(steps, seconds): the steps run in a window of at least `seconds`
    after `warmup` steps, synchronised at the end."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start, steps = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        for _ in range(5):
            step()
        steps += 5
        torch.cuda.synchronize()
    return steps, time.perf_counter() - start


def wait_until(start_at, step, warmup):
    """Runs `warmup` steps, then waits for the wall-clock time `start_at`, so
    that processes sharing a GPU start their timed windows together."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    while time.time() < start_at:
        time.sleep(0.001)


def last_json_row(stdout, stderr):
    rows = [line for line in stdout.splitlines() if line.startswith("{")]
    return json.loads(rows[-1]) if rows else {"error": (stderr or stdout)[-800:]}


def invoke(script, argv, env=None, timeout=600):
    """`script one ARGV` in its own process; its last JSON row, or an error row."""
    cmd = [sys.executable, script, "one"] + argv
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s", "argv": argv}
    row = last_json_row(done.stdout, done.stderr)
    if "error" in row:
        row["argv"] = argv
    return row


def mps_rows(script, argv, n, start_delay=40, timeout=600, per_process=lambda i: []):
    """N processes of `script one ARGV --start-at T` at once under a private
    MPS daemon (always quit afterwards); their JSON rows, in order. Each
    warms up, then all start their timed windows at T. Process i gets the
    extra arguments per_process(i)."""
    pipe = tempfile.mkdtemp(prefix="colo-mps-")
    env = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=pipe, CUDA_MPS_LOG_DIRECTORY=pipe)
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
    try:
        cmd = [sys.executable, script, "one"] + argv + ["--start-at", str(time.time() + start_delay)]
        procs = [subprocess.Popen(cmd + per_process(i), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=env) for i in range(n)]
        rows = []
        for p in procs:
            try:
                out, err = p.communicate(timeout=timeout)
                rows.append(last_json_row(out, err))
            except subprocess.TimeoutExpired:
                p.kill()
                rows.append({"error": f"timed out after {timeout} s"})
        return rows
    finally:
        subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True, env=env)


def gpu_memory_used_mib(index=0):
    """The GPU's used memory (MiB) as nvidia-smi reports it, all processes."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i",
                          str(index)], capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[0])


class GpuMemoryPeak:
    """Samples the GPU's used memory every `period` s while open; `.peak_mib`
    is the highest reading less the reading when it opened (what the runs
    inside took, contexts and MPS server included)."""

    def __init__(self, period=0.25):
        self.period, self.peak_mib, self.idle_mib = period, 0.0, 0.0
        self._stop = threading.Event()

    def __enter__(self):
        self.idle_mib = gpu_memory_used_mib()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak_mib = max(self.peak_mib, gpu_memory_used_mib() - self.idle_mib)
            time.sleep(self.period)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
