"""Shared data loading against each job loading for itself (issue 19).

N work-bound training jobs (fixed steps each) on the same JPEG image folder,
all pinned to the same CPU cores (a CPU-poor instance), in three modes:
  own_colo   each job runs colo's pipeline itself (colo.data.LocalImageLoader)
  own_torch  each job runs torchvision ImageFolder + DataLoader workers
  shared     one `colo loader serve` for all; jobs read colo.data.SharedLoader
             (on a GPU the producer also keeps its ring there: one host-to-device
             copy per batch for all jobs, CUDA IPC; the jobs check they read it)
  shared_host  the same with the ring in host memory only (each job copies
             its own batches to the GPU)
  shared_slowest  shared with pace = "slowest" (TensorSocket's rubber band:
             the fastest job waits for the slowest) instead of the default
             pace "fastest" (no job waits for another; a slower one skips)
--model and --batch take comma lists, job by job (cycled), for jobs that
train at different speeds.
Measured per mode: aggregate trained samples/s (all samples over the span
from the first job's first step to the last job's last), CPU core-seconds
per trained sample, and each job's time waiting for data; the same over the
window in which all jobs train (`all_running`: without the start-up
stagger, in which a job alone on the GPU is data-bound in any mode), and
the time from launching the jobs to the last one's end (set-up included:
what a user waits for; `launch_to_last_end_s`, and `start_to_last_end_s`
from the round's start, the shared producer's start included: the jobs
are launched 1 s after it, or with --launch-when-full once its ring is
full, so that it no longer decodes beside their set-up). Every round's jobs keep
their set-up phases from launch and their wait before, while and after all
jobs trained. CPU
counts the training window, not start-up (importing torch, CUDA set-up):
each job reads its own process tree's CPU (DataLoader workers included) at
its first and last step, and the producer's is sampled from /proc over the
jobs' span. Decoding counts whenever it happened: the producer's decode
threads from its start (it fills its ring while the jobs start), as does
its main thread (it makes and populates the ring, and on a GPU registers
it with CUDA and sets up its context; the jobs' CUDA set-up does not
count, which favours own loading), and a
job's own colo decode threads from theirs (own_torch's DataLoader workers
only over the span, which favours own_torch).
Every job's loop is the same in all modes: SGD with momentum, reading its
loss every --log-every steps (1 by default, as a loop that logs it does;
the host then waits for the GPU there instead of spinning in a full launch
queue), under bf16 autocast with --amp. --mps runs each round in a process
of its own under `colo mps run` (a private MPS daemon, pinned to --cores
and quit after the round), so that the producer and the jobs are the
daemon's clients, as jobs that colo collocates with MPS are.

  python3 bench/data/shared_loading.py run --images DIR --jobs 2 --cores 0-1 --device cpu --model tiny \
      --steps 60 --colo build/colo --out bench/results/data/shared/cpu_2jobs.json
"""
import argparse
import json
import re
import os
import statistics
import subprocess
import sys
import tempfile
import time

from process_cpu import CpuSampler, mps_server_pids, process_cpu_s, thread_cpu_s, tree_cpu_s
from shared_summary import shared_mode, summarize

HERE = os.path.abspath(__file__)


def run_jobs(commands, what):
    """Starts `commands` at once and returns the JSON object each prints
    last; SystemExit with the stderr of the first that fails."""
    jobs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for command in commands]
    results = []
    for p in jobs:
        out, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"{what} job failed:\n{err[-3000:]}")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def build_model(name, classes):
    import torch.nn as nn
    if name != "tiny":  # any torchvision classification model: resnet18, efficientnet_b0, vit_b_16, ...
        import torchvision
        return torchvision.models.get_model(name, num_classes=classes)
    # "tiny": a model whose step costs little next to decoding its batch,
    # as on a GPU, so the CPU run measures the data path.
    return nn.Sequential(nn.AvgPool2d(4), nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(16, classes))


def torch_loader(root, size, batch, workers, device):
    import torch
    import torchvision
    import torchvision.transforms as T
    transform = T.Compose([T.RandomResizedCrop(size, antialias=True), T.RandomHorizontalFlip(), T.ToTensor(),
                           T.Normalize([0.5] * 3, [0.25] * 3)])
    folder = torchvision.datasets.ImageFolder(root, transform)
    loader = torch.utils.data.DataLoader(folder, batch_size=batch, shuffle=True, drop_last=True, num_workers=workers,
                                         pin_memory=device.startswith("cuda"), persistent_workers=workers > 0)
    return loader, len(folder.classes)


def job(args):
    import torch
    import torch.nn.functional as F
    import colo.data
    # When each set-up step ended (where the jobs' first steps drift apart).
    phases = {"imported": time.time()}
    torch.set_num_threads(max(1, args.torch_threads))
    device = args.device
    # Every mode alike: CUDA waits sleep (colo's loaders would ask for it
    # anyway), unless --cuda-spin keeps CUDA's default spinning.
    sleeps = not args.cuda_spin and colo.data.sleep_while_waiting(device)
    if args.source == "shared":
        loader = colo.data.SharedLoader(args.data, args.batch, device=device, timeout=60,
                                        sleep_while_waiting=not args.cuda_spin)
        classes = loader.classes
        if args.expect_device_ring and not loader.reads_device_ring:
            raise SystemExit("the shared loader's device ring could not be read")
    elif args.source == "own_colo":
        loader = colo.data.LocalImageLoader(args.data, args.batch, device=device, threads=args.threads,
                                            sleep_while_waiting=not args.cuda_spin)
        classes = loader.classes
    else:
        spec = colo.data._core().loader_spec(args.data)
        loader, classes = torch_loader(spec["root"], spec["size"], args.batch, args.threads, device)
    phases["loader"] = time.time()
    model = build_model(args.model, classes).to(device)
    if device.startswith("cuda"):
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    phases["model"] = time.time()
    wait = steps = 0
    start = None
    timeline = []  # (time a step was queued or, reading the loss, done; data wait so far)

    def batches():
        while True:
            yield from loader

    it = batches()
    while steps < args.steps:
        clock = time.perf_counter()
        x, y = next(it)
        if start is not None:  # the first batch (loader start-up) is not timed
            wait += time.perf_counter() - clock
        else:
            phases["first_batch"] = time.time()
        if device.startswith("cuda"):
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with torch.autocast(device.split(":")[0], dtype=torch.bfloat16, enabled=args.amp):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if args.log_every and (steps + 1) % args.log_every == 0:
            loss.item()  # a loop that logs its loss waits for the step here
        if start is None:
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            start = time.time()
            cpu_start = tree_cpu_s(os.getpid())
            threads_start = thread_cpu_s(os.getpid())
            # What its own decode threads did before (its first batches),
            # counted like the shared producer's decoding before the span.
            decoded_before = thread_cpu_s(os.getpid()).get("colo-decode", 0.0)
            continue
        steps += 1
        timeline.append((time.time(), wait))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    end = time.time()
    cpu = tree_cpu_s(os.getpid()) - cpu_start + decoded_before
    # Where a job's own CPU went over its span, by thread name (the Python
    # loop, autograd's device thread, decode threads, ZeroMQ, CUDA's).
    threads = {name: round(v - threads_start.get(name, 0.0), 3) for name, v in thread_cpu_s(os.getpid()).items()}
    print(json.dumps({"model": args.model, "batch": args.batch, "start": start, "end": end,
                      "samples": steps * args.batch, "wait_s": wait, "cpu_core_s": cpu,
                      "threads_cpu_core_s": {k: v for k, v in threads.items() if v > 0},
                      "loss": loss.item(), "device_ring": bool(getattr(loader, "reads_device_ring", False)),
                      "cuda_waits_sleep": sleeps, "phases": phases, "timeline": timeline}),
          flush=True)


def run_round(args, mode, data):
    """One round of one mode; with --mps, this same script run for just that
    round under `colo mps run`, whose private daemon its processes are the
    clients of."""
    if not args.mps:
        return run_mode(args, mode, data)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "round.json")
        round_args = [a for a in sys.argv[1:] if a != "--mps"] + [
            "--round-mode", mode, "--round-data", json.dumps(data), "--round-out", out]
        command = ["taskset", "-c", args.cores, args.colo, "mps", "run", "--count", "1", "--control", args.mps_control,
                   "--dir", os.path.join(tmp, "mps"), "--", sys.executable, HERE] + round_args
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0 or not os.path.exists(out):
            raise SystemExit(f"{mode} round under MPS failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        with open(out) as f:
            return json.load(f)


def wait_until_ring_full(colo, data, producer, limit_s=120):
    """Returns once the producer at DATA.toml `data` has published as many
    chunks as its ring holds: with no consumer yet it then stops decoding,
    so the jobs set up on idle cores."""
    with open(data) as f:
        address = re.search(r'^address = "([^"]+)"', f.read(), re.M).group(1)
    deadline = time.time() + limit_s
    while time.time() < deadline:
        if producer.poll() is not None:
            raise SystemExit(f"the producer exited ({producer.returncode}) before its ring was full: "
                             f"{producer.stderr.read()[-2000:]}")
        done = subprocess.run([colo, "loader", "status", address, "--timeout", "0.5"], capture_output=True, text=True)
        if done.returncode == 0:
            stats = json.loads(done.stdout)
            if stats["chunks"] >= stats["buffer_slots"]:
                return
        time.sleep(0.1)
    raise SystemExit(f"the producer's ring was not full after {limit_s} s")


def run_mode(args, mode, data):
    """`data` maps a mode's source to its DATA.toml: shared (the producer also
    keeps its ring on the GPU when the jobs train on one), shared_host (the
    ring in host memory only), or own_colo / own_torch."""
    taskset = ["taskset", "-c", args.cores]
    producer = sampler = producer_stats = None
    source = "shared" if mode.startswith("shared") else mode
    device_ring = mode in ("shared", "shared_slowest", "shared_scheduler") and args.device.startswith("cuda")
    data = data["shared"] if mode == "shared_scheduler" else data[mode] if mode in data else data["shared_host"]
    round_start = time.time()
    if mode == "shared_scheduler":
        pass  # `colo run` starts the producer and launches the jobs once its ring is full
    elif source == "shared":
        producer = subprocess.Popen(taskset + [args.colo, "loader", "serve", data, "--report", "0"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sampler = CpuSampler(producer.pid)
        if args.launch_when_full:
            wait_until_ring_full(args.colo, data, producer)
        else:
            time.sleep(1.0)
    models, batches = args.model.split(","), args.batch.split(",")
    commands = [taskset + [sys.executable, HERE, "job", "--source", source, "--data", data,
                           "--model", models[i % len(models)], "--device", args.device, "--steps", str(args.steps),
                           "--batch", batches[i % len(batches)], "--threads", str(args.threads),
                           "--torch-threads", str(args.torch_threads), "--log-every", str(args.log_every)]
                + (["--cuda-spin"] if args.cuda_spin else [])
                + (["--amp"] if args.amp else [])
                + (["--expect-device-ring"] if device_ring else [])
                for i in range(args.jobs)]
    launched = time.time()
    scheduler_mps_cpu = None
    if mode == "shared_scheduler":
        results, sampler, producer_stats, scheduler_mps_cpu = run_under_scheduler(
            args, data, [c[len(taskset):] for c in commands])
    else:
        results = run_jobs(commands, mode)
    for r in results:
        r["phases"] = {"launched": launched, **r["phases"]}
    first, last = min(r["start"] for r in results), max(r["end"] for r in results)
    cpu = sum(r["cpu_core_s"] for r in results)
    # The MPS server's CPU over the whole round (start-up included), apart:
    # `cpu` stays comparable with rounds without MPS.
    pipe = os.environ.get("CUDA_MPS_PIPE_DIRECTORY")
    mps_cpu = pipe and {"pids": mps_server_pids(pipe)}
    if mps_cpu:
        mps_cpu["cpu_core_s"] = sum(process_cpu_s(pid) for pid in mps_cpu["pids"])
    if scheduler_mps_cpu:
        # The MPS server colo run started for its jobs alone serves the
        # shared mode's choice of MPS: its CPU counts in the mode's.
        mps_cpu = {**scheduler_mps_cpu, "counted": True}
        cpu += scheduler_mps_cpu["cpu_core_s"]
    producer_cpu = None
    if producer:
        producer.send_signal(2)
        out, _ = producer.communicate(timeout=30)
        sampler.finish()
        producer_stats = json.loads(out.strip().splitlines()[-1])
    if sampler:
        # Decoding and the main thread count from the producer's start (what
        # it decodes before the jobs' first steps, they read; the main thread
        # makes the ring, populating its pages, and registers it with CUDA);
        # its other threads over the jobs' span, as the jobs' own CPU is.
        threads = sampler.threads_between(first, last)
        from_start = sampler.threads_between(0, last)
        early = ("colo-decode", "colo")
        producer_cpu = sum(from_start.get(name, 0.0) for name in early) + sum(
            v for name, v in threads.items() if name not in early)
        producer_stats = producer_stats or {}
        producer_stats["threads_cpu_core_s"] = threads
        producer_stats["decode_cpu_core_s_before_span"] = from_start.get("colo-decode", 0.0) - threads.get(
            "colo-decode", 0.0)
        producer_stats["main_cpu_core_s_before_span"] = from_start.get("colo", 0.0) - threads.get("colo", 0.0)
        cpu += producer_cpu
    samples = sum(r["samples"] for r in results)
    span = last - first
    # The jobs' own CPU per trained sample by thread name (core-ms): where
    # "c", the training loop's share, goes in each mode.
    job_threads = {}
    for r in results:
        for name, v in r.get("threads_cpu_core_s", {}).items():
            job_threads[name] = job_threads.get(name, 0.0) + v
    job_threads = {name: round(v / samples * 1000, 4) for name, v in sorted(job_threads.items(), key=lambda kv: -kv[1])}
    return {"mode": mode, "samples": samples, "span_s": span, "samples_per_s": samples / span,
            # For jobs of different speeds, whose span the slowest sets: the
            # mean time from the first job's first step to each job's last.
            "mean_completion_s": sum(r["end"] - first for r in results) / len(results),
            # What a user waits for: from launching the jobs (set-up included) to the last one's end.
            "launch_to_last_end_s": last - launched,
            # ... and from the round's start, the producer's own start (and fill, with --launch-when-full) included.
            "start_to_last_end_s": last - round_start,
            "cpu_core_s": cpu, "cpu_core_s_per_sample": cpu / samples, "producer_cpu_core_s": producer_cpu,
            "jobs_threads_core_ms_per_sample": job_threads,
            "wait_pct": [100 * r["wait_s"] / (r["end"] - r["start"]) for r in results],
            "all_running": all_running(results),
            "jobs": results, "producer": producer_stats, "mps_server": mps_cpu}


def run_under_scheduler(args, data, commands):
    """The jobs run by `colo run` (mode shared_scheduler), as a user runs
    them: a job file whose jobs name `loader = DATA.toml`, so that colo's
    scheduler starts one producer, launches the jobs once its ring is full
    and stops it when they end; `colo run` itself is pinned to --cores, and
    everything it starts with it. Returns the jobs' results (from their
    logs), a CpuSampler of the producer, and its last stats (from its log)."""
    import glob
    import threading
    work = tempfile.mkdtemp(prefix="colo-sched-")
    jobs_file = os.path.join(work, "jobs.toml")
    with open(jobs_file, "w") as f:
        for i, argv in enumerate(commands):
            f.write(f'[[job]]\nname = "job{i}"\ncommand = [{", ".join(json.dumps(a) for a in argv)}]\n'
                    f'loader = {json.dumps(data)}\n'
                    # Without: what a user's job file that declares neither gets from the scheduler.
                    + (f'mem = "8GiB"\nsm_share = {args.scheduler_sm_share}\n' if args.scheduler_sm_share > 0 else "")
                    + "\n")
    store = os.path.join(work, "jobs.db")
    # colo run's own MPS daemon (--scheduler-mode mps) listens here; its
    # server starts with the first client and is gone once colo run ends.
    mps_pipe = store + ".logs/mps/pipe"
    found = {"mps": {}}

    def producer_pid():
        wanted = b"\0".join([b"loader", b"serve", data.encode()])
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as f:
                        if wanted in f.read():
                            return int(entry)
                except OSError:
                    continue
        return None

    def watch_for_producer(stop):
        # Until both are found: the producer, and (under MPS) its server.
        while not stop.is_set() and ("sampler" not in found or (args.scheduler_mode == "mps" and not found["mps"])):
            pid = "sampler" not in found and producer_pid()
            if pid:
                found["sampler"] = CpuSampler(pid)
            if args.scheduler_mode == "mps":
                for pid in mps_server_pids(mps_pipe):
                    found["mps"].setdefault(pid, CpuSampler(pid))
            stop.wait(0.02)

    stop = threading.Event()
    watcher = threading.Thread(target=watch_for_producer, args=(stop,), daemon=True)
    watcher.start()
    done = subprocess.run(["taskset", "-c", args.cores, args.colo, "run", jobs_file, "--store", store,
                           "--mode", args.scheduler_mode]
                          # Without a GPU `colo run` runs one job at a time unless given slots.
                          + ([] if args.device.startswith("cuda") else ["--cpu-slots", str(len(commands))]),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stop.set()
    watcher.join()
    sampler = found.get("sampler")
    if sampler:
        sampler.finish()
    mps_cpu = None
    if found["mps"]:
        for server in found["mps"].values():
            server.finish()
        mps_cpu = {"pids": sorted(found["mps"]),
                   "cpu_core_s": sum(sum(s.threads[-1][1].values()) for s in found["mps"].values() if s.threads)}
    logs = sorted(glob.glob(store + ".logs/job-*.log"), key=lambda p: int(re.search(r"job-(\d+)", p).group(1)))
    if done.returncode != 0 or len(logs) != len(commands):
        tails = "".join(open(p).read()[-1500:] for p in logs)
        raise SystemExit(f"colo run failed (exit {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-3000:]}\n{tails}")
    results = [json.loads(open(p).read().strip().splitlines()[-1]) for p in logs]
    producer_stats = None
    for p in glob.glob(store + ".logs/loader-*.log"):
        try:
            producer_stats = json.loads(open(p).read().strip().splitlines()[-1])
        except (ValueError, IndexError):
            pass
    return results, sampler, producer_stats, mps_cpu


def all_running(results):
    """Samples/s and each job's data wait over the window in which every job
    trains (the last start to the first end), without the start-up stagger:
    a job alone on the GPU is data-bound in any mode."""
    w0, w1 = max(r["start"] for r in results), min(r["end"] for r in results)
    if w1 - w0 <= 0:
        return None

    samples = sum(r["batch"] * sum(1 for when, _ in r["timeline"] if w0 < when <= w1) for r in results)
    waits = [100 * (wait_at(r["timeline"], w1) - wait_at(r["timeline"], w0)) / (w1 - w0) for r in results]
    return {"window_s": w1 - w0, "samples_per_s": samples / (w1 - w0), "wait_pct": waits}


def wait_at(timeline, t):
    """A job's data wait so far at time t, from its (time, wait so far) timeline."""
    before = [w for when, w in timeline if when <= t]
    return before[-1] if before else 0.0


def wait_split(results):
    """Each job's data wait before the window in which every job trains, in
    it, and after it (seconds, with the time it spent in each): where a
    round's high wait came from, the start-up stagger or the run's tail."""
    w0, w1 = max(r["start"] for r in results), min(r["end"] for r in results)
    split = []
    for r in results:
        t0 = min(max(w0, r["start"]), r["end"])
        t1 = min(max(w1, t0), r["end"])  # t0 when no two jobs ran at once
        a, b = wait_at(r["timeline"], t0), wait_at(r["timeline"], t1)
        split.append({"before_s": t0 - r["start"], "wait_before_s": a, "together_s": t1 - t0,
                      "wait_together_s": b - a, "after_s": r["end"] - t1, "wait_after_s": r["wait_s"] - b})
    return split


def report_mode(m):
    """Prints one round of one mode as it ends (a run cut short still says something)."""
    p = m["producer"] or {}
    where = ""
    if p:
        where = (f"; producer waited {p.get('waited_for_slots_s', 0):.1f} s for slots, "
                 f"{p.get('waited_for_demand_s', 0):.1f} s for demand, "
                 f"{p.get('waited_for_decoding_s', 0):.1f} s for decoding, {p.get('waited_for_copies_s', 0):.1f} s "
                 f"for {p.get('mirror_rounds', 0)} rounds of device copies, in {p.get('uptime_s', 0):.1f} s")
    if m.get("mps_server"):
        where += f"; MPS server {m['mps_server']['cpu_core_s']:.2f} core-s"
    a = m["all_running"] or {}
    together = a and (f"; all {len(m['jobs'])} running ({a['window_s']:.1f} s): {a['samples_per_s']:.0f} samples/s, "
                      f"wait {max(a['wait_pct']):.1f}%")
    print(f"  round: {m['mode']} {m['samples_per_s']:.0f} samples/s, {m['cpu_core_s_per_sample'] * 1000:.3f} "
          f"core-ms/sample, wait {max(m['wait_pct']):.1f}%, launch to last end {m['launch_to_last_end_s']:.1f} s"
          f"{together}{where}", file=sys.stderr, flush=True)
    jobs = "; ".join(f"{j['model']}/{j['batch']} {j['samples'] / (j['end'] - j['start']):.0f} samples/s wait "
                     f"{100 * j['wait_s'] / (j['end'] - j['start']):.1f}% ({w['wait_before_s']:.2f} s in its "
                     f"{w['before_s']:.1f} s before all ran, {w['wait_together_s']:.2f} s together, "
                     f"{w['wait_after_s']:.2f} s in {w['after_s']:.1f} s after)"
                     for j, w in zip(m["jobs"], wait_split(m["jobs"])))
    print(f"    jobs: {jobs}", file=sys.stderr, flush=True)
    print("    jobs' own core-ms per sample by thread: " + ", ".join(
        f"{name} {v:.3f}" for name, v in m.get("jobs_threads_core_ms_per_sample", {}).items() if v >= 0.001),
        file=sys.stderr, flush=True)
    if p.get("threads_cpu_core_s"):
        print("    producer core-ms per trained sample by thread (span): " + ", ".join(
            f"{name} {v / m['samples'] * 1000:.3f}" for name, v in p["threads_cpu_core_s"].items() if v > 0),
            file=sys.stderr, flush=True)
    print("    set-up, s from launch (imported, loader, model, first batch, first step): " + "; ".join(
        " ".join(f"{t - j['phases']['launched']:.1f}" for t in (
            j["phases"]["imported"], j["phases"]["loader"], j["phases"]["model"], j["phases"]["first_batch"], j["start"]))
        for j in m["jobs"]), file=sys.stderr, flush=True)
    return m


def run(args):
    if args.round_mode:  # one round for run_round under `colo mps run`
        result = run_mode(args, args.round_mode, json.loads(args.round_data))
        with open(args.round_out, "w") as f:
            json.dump(result, f)
        return
    with tempfile.TemporaryDirectory() as tmp:
        data = {}
        on_device = f'device = "{args.device}"\n' if args.device.startswith("cuda") else ""
        for mode, extra in (("shared_host", ""), ("shared", on_device),
                            ("shared_slowest", on_device + 'pace = "slowest"\n')):
            if mode == "shared" and not on_device:
                data[mode] = data["shared_host"]
                continue
            data[mode] = os.path.join(tmp, f"{mode}.toml")
            with open(data[mode], "w") as f:
                f.write(f'root = "{os.path.abspath(args.images)}"\nsize = {args.size}\n'
                        f'threads = {args.producer_threads}\nchunk = {args.chunk}\nbuffer = {args.buffer}\n'
                        f'ahead = {args.ahead}\n'
                        f'address = "ipc://{tmp}/{mode}.sock"\n{extra}')
        # Modes are interleaved round by round, so a slow spell of the machine
        # hits every mode; each mode's figures are the median round's.
        # The file is written after every round: a run cut short keeps what it measured.
        rounds = []
        for _ in range(args.repeat):
            rounds.append([report_mode(run_round(args, m, data)) for m in args.modes.split(",")])
            summary = summarise_rounds(args, rounds)
            if args.out:
                os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
                with open(args.out, "w") as f:
                    json.dump(summary, f, indent=1)
    print_summary(summary)


def summarise_rounds(args, rounds):
    """The run's figures from the rounds done so far (each mode's median round)."""
    modes = []
    for column in zip(*rounds):
        ranked = sorted(column, key=lambda m: m["samples_per_s"])
        median = dict(ranked[len(ranked) // 2])
        median["rounds_samples_per_s"] = [m["samples_per_s"] for m in column]
        median["rounds_cpu_core_s_per_sample"] = [m["cpu_core_s_per_sample"] for m in column]
        # Every round's figures and its jobs' (timelines only in the median round's `jobs`).
        median["rounds"] = [{**{k: m[k] for k in ("samples_per_s", "cpu_core_s_per_sample", "wait_pct", "all_running",
                                                  "mean_completion_s", "launch_to_last_end_s",
                                                  "start_to_last_end_s")},
                             "jobs": [{**{k: j[k] for k in ("model", "batch", "start", "end", "samples", "wait_s",
                                                            "cpu_core_s", "phases")}, **split}
                                      for j, split in zip(m["jobs"], wait_split(m["jobs"]))]}
                            for m in column]
        modes.append(median)
    own = [m for m in modes if not m["mode"].startswith("shared")]
    best_own = max(own, key=lambda m: m["samples_per_s"]) if own else None
    shared = shared_mode(modes)
    summary = {"jobs": args.jobs, "cores": args.cores, "device": args.device, "model": args.model,
               "cuda_waits": "spin" if args.cuda_spin else "sleep", "amp": args.amp, "log_every": args.log_every,
               "mps": args.mps,
               "steps": args.steps, "batch": args.batch, "size": args.size, "repeat": args.repeat,
               "chunk": args.chunk, "buffer": args.buffer, "ahead": args.ahead,
               "producer_threads": args.producer_threads,
               "scheduler_mode": args.scheduler_mode, "scheduler_sm_share": args.scheduler_sm_share,
               "best_own": best_own and best_own["mode"],
               "speedup": best_own and shared["samples_per_s"] / best_own["samples_per_s"],
               "cpu_per_sample_ratio": best_own and shared["cpu_core_s_per_sample"] / best_own["cpu_core_s_per_sample"],
               "shared_wait_pct_max": max(shared["wait_pct"]),
               "all_running": all_running_summary(shared, best_own),
               # Every shared mode against the best own one (pace slowest among them, if run).
               "shared_modes": {m["mode"]: {"speedup": best_own and m["samples_per_s"] / best_own["samples_per_s"],
                                            "cpu_per_sample_ratio": best_own and m["cpu_core_s_per_sample"]
                                            / best_own["cpu_core_s_per_sample"],
                                            "wait_pct_max": max(m["wait_pct"]),
                                            "all_running": all_running_summary(m, best_own)}
                                for m in modes if m["mode"].startswith("shared")},
               "command": " ".join([sys.executable] + sys.argv), "modes": modes}
    return summary


def print_summary(summary):
    """Prints each mode's median round and shared against the best own mode."""
    for m in summary["modes"]:
        print(f"{m['mode']:>10}  {m['samples_per_s']:8.0f} samples/s (rounds "
              f"{' '.join(f'{v:.0f}' for v in m['rounds_samples_per_s'])})  {m['cpu_core_s_per_sample'] * 1000:7.3f} "
              f"core-ms/sample  wait {max(m['wait_pct']):5.1f}%", file=sys.stderr)
    if summary["best_own"]:
        together = summary["all_running"]
        print(f"shared over {summary['best_own']}: {summary['speedup']:.2f}x samples/s, "
              f"{summary['cpu_per_sample_ratio']:.2f}x CPU per sample; with all jobs running "
              f"{together.get('speedup') or 0:.2f}x, shared wait {together['shared']['wait_pct_max'] or 0:.1f}%",
              file=sys.stderr)


def all_running_summary(shared, own):
    """The figures of the window in which every job trains (medians over the
    rounds, each mode's rounds apart), shared against own."""
    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median_high(values) if values else None

    def of(mode):
        windows = [r["all_running"] for r in mode["rounds"] if r["all_running"]]
        return {"samples_per_s": median(w["samples_per_s"] for w in windows),
                "wait_pct_max": median(max(w["wait_pct"]) for w in windows),
                "rounds_samples_per_s": [w["samples_per_s"] for w in windows],
                "rounds_wait_pct_max": [max(w["wait_pct"]) for w in windows]}

    result = {"shared": of(shared)}
    if own:
        result[own["mode"]] = of(own)
        if result["shared"]["samples_per_s"] and result[own["mode"]]["samples_per_s"]:
            result["speedup"] = result["shared"]["samples_per_s"] / result[own["mode"]]["samples_per_s"]
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--images", required=True)
    r.add_argument("--jobs", type=int, default=2)
    r.add_argument("--cores", default="0-1")
    r.add_argument("--threads", type=int, default=2, help="decode threads (or DataLoader workers) per own job")
    r.add_argument("--producer-threads", type=int, default=2)
    r.add_argument("--repeat", type=int, default=1, help="rounds of all modes; the median round counts")
    r.add_argument("--buffer", type=int, default=8, help="the producer's ring, in chunks")
    r.add_argument("--chunk", type=int, default=32, help="samples per chunk")
    r.add_argument("--ahead", type=int, default=8,
                   help="chunks the producer decodes past the newest asked for, once its ring was full")
    r.add_argument("--torch-threads", type=int, default=1)
    r.add_argument("--modes", default="own_colo,own_torch,shared",
                   help="own_colo, own_torch, shared (the producer's ring also on the jobs' GPU), shared_host")
    r.add_argument("--colo", default="build/colo")
    r.add_argument("--scheduler-mode", default="shared", choices=["shared", "mps"],
                   help="`colo run --mode` for mode shared_scheduler")
    r.add_argument("--scheduler-sm-share", type=float, default=0.15,
                   help="sm_share of each job under shared_scheduler (placement; under MPS also its SM cap); "
                        "0: the job file declares neither sm_share nor mem, as a user's may not")
    r.add_argument("--launch-when-full", action="store_true",
                   help="shared modes: launch the jobs once the producer's ring is full (it then idles instead of "
                        "decoding beside their set-up); default: 1 s after starting it")
    r.add_argument("--mps", action="store_true",
                   help="every round under `colo mps run`: a private CUDA MPS daemon pinned to --cores, the "
                        "producer and jobs its clients")
    r.add_argument("--mps-control", default="nvidia-cuda-mps-control", help="the MPS control program (--mps)")
    for name in ("--round-mode", "--round-data", "--round-out"):  # run_round's one round under `colo mps run`
        r.add_argument(name, help=argparse.SUPPRESS)
    r.add_argument("--out")
    s = sub.add_parser("summarize")
    s.add_argument("--gpu", required=True)
    s.add_argument("--cpu", required=True)
    s.add_argument("--gpu-other", nargs="*", help="more GPU runs, listed under other_gpu_runs")
    s.add_argument("--gpu-pool", nargs="*", help="runs of --gpu's setup (buffer aside) whose rounds are pooled "
                                                 "with its own under gpu_4jobs_pooled")
    s.add_argument("--gpu-pool-without-start-group", nargs="*",
                   help="runs of --gpu's setup launched once the ring was full, before start groups, pooled under "
                        "gpu_4jobs_pooled_without_start_group")
    s.add_argument("--decode-cost", help="a decode_cost.py run, kept under decode_cost")
    s.add_argument("--gpu-pool-earlier", nargs="*", help="runs of --gpu's setup launched with the producer (not "
                                                         "once its ring was full), pooled under "
                                                         "gpu_4jobs_pooled_launched_with_producer")
    s.add_argument("--out", required=True)
    r.add_argument("--model", default="tiny", help="the jobs' model (tiny, or a torchvision model's name), or a comma "
                   "list job by job (cycled)")
    r.add_argument("--batch", default="64", help="the jobs' batch size, or a comma list job by job (cycled)")
    j = sub.add_parser("job")
    j.add_argument("--model", default="tiny")
    j.add_argument("--batch", type=int, default=64)
    j.add_argument("--source", required=True)
    j.add_argument("--data", required=True)
    j.add_argument("--threads", type=int, default=2)
    j.add_argument("--torch-threads", type=int, default=1)
    j.add_argument("--expect-device-ring", action="store_true", help="fail unless SharedLoader reads the GPU ring")
    for p in (r, j):
        p.add_argument("--cuda-spin", action="store_true",
                       help="keep CUDA's default of spinning while waiting for the GPU (all modes)")
        p.add_argument("--amp", action="store_true", help="train under bf16 autocast (all modes)")
        p.add_argument("--log-every", type=int, default=1,
                       help="read the loss every N steps, as a loop that logs it does (0: never)")
        p.add_argument("--device", default="cpu")
        p.add_argument("--steps", type=int, default=50)
        p.add_argument("--size", type=int, default=112)
    args = parser.parse_args()
    {"run": run, "job": job, "summarize": summarize}[args.what](args)


if __name__ == "__main__":
    main()
