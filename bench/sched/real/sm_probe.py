"""Which signal gives a job's SM activity on this GPU, with MPS and without?

Runs two training jobs (vision_job.py) one after the other, A alone and then
A + B, with and without MPS, while it reads
  - NVML's per-process utilisation samples (nvmlDeviceGetProcessUtilization),
  - the device's SM activity from GPM, through `colo monitor` (timeline CSV).
Prints, per phase, the device's mean SM activity and each pid's mean smUtil,
and writes them as JSON.

    python3 bench/sched/real/sm_probe.py COLO_BINARY OUT.json
"""
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

import pynvml

HERE = os.path.dirname(os.path.abspath(__file__))
JOB_A = ["vision_job.py", "--model", "resnet18", "--res", "64", "--batch", "128", "--steps", "100000"]
JOB_B = ["vision_job.py", "--model", "mobilenet_v3_small", "--res", "64", "--batch", "128", "--steps", "100000"]


def process_samples(handle, seconds):
    """Mean smUtil per pid from NVML's per-process samples over `seconds`."""
    per_pid, since = {}, int(time.time() * 1e6)
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.5)
        try:
            samples = pynvml.nvmlDeviceGetProcessUtilization(handle, since)
        except pynvml.NVMLError as e:
            return {"error": str(e)}
        for s in samples:
            per_pid.setdefault(s.pid, []).append(s.smUtil)
            since = max(since, s.timeStamp)
    return {str(pid): sum(v) / len(v) for pid, v in per_pid.items()}


def device_activity(timeline, t0, t1):
    rows = [r for r in csv.DictReader(open(timeline)) if r.get("sm_active") not in (None, "")]
    values = [float(r["sm_active"]) for r in rows if t0 <= float(r["unix_s"]) <= t1]
    return sum(values) / len(values) if values else None


def phase(colo, env, label, handle, results, timeline):
    a = subprocess.Popen([sys.executable] + JOB_A, cwd=HERE, env=env, stdout=subprocess.DEVNULL)
    time.sleep(10)
    t0 = time.time()
    alone = process_samples(handle, 5)
    t1 = time.time()
    b = subprocess.Popen([sys.executable] + JOB_B, cwd=HERE, env=env, stdout=subprocess.DEVNULL)
    time.sleep(10)
    t2 = time.time()
    both = process_samples(handle, 5)
    t3 = time.time()
    for p in (a, b):
        p.kill()
        p.wait()
    time.sleep(1)
    results[label] = {"pids": {"A": a.pid, "B": b.pid},
                      "A_alone": {"nvml_process_sm_util": alone, "device_sm_active": device_activity(timeline, t0, t1)},
                      "A_and_B": {"nvml_process_sm_util": both, "device_sm_active": device_activity(timeline, t2, t3)}}
    print(label, json.dumps(results[label]), flush=True)


def main():
    colo, out = sys.argv[1], sys.argv[2]
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    work = tempfile.mkdtemp()
    timeline = os.path.join(work, "timeline.csv")
    monitor = subprocess.Popen([colo, "monitor", "--interval", "0.5", "--out", timeline, "--", "sleep", "100000"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = {}
    try:
        phase(colo, dict(os.environ), "no_mps", handle, results, timeline)
        mps = dict(os.environ, CUDA_MPS_PIPE_DIRECTORY=os.path.join(work, "pipe"),
                   CUDA_MPS_LOG_DIRECTORY=os.path.join(work, "log"))
        os.makedirs(mps["CUDA_MPS_PIPE_DIRECTORY"])
        os.makedirs(mps["CUDA_MPS_LOG_DIRECTORY"])
        subprocess.run(["nvidia-cuda-mps-control", "-d"], env=mps, check=True)
        try:
            phase(colo, mps, "mps", handle, results, timeline)
        finally:
            subprocess.run(["nvidia-cuda-mps-control"], input=b"quit\n", env=mps)
    finally:
        monitor.terminate()
        monitor.wait()
    json.dump(results, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
