"""What decoding one sample costs the CPU, in a shared producer and in jobs
that decode for themselves, busy and partly idle (issue 19).

On the H100 host the shared producer's decode threads spent 15-25% more
core-time per decoded sample than own_colo jobs did, while on a 2-core VM
the two were equal. This separates the candidate causes without a
training loop or a GPU: the same JPEG folder, the same decode code, the
same cores (taskset), in four setups:
  own        P processes, each decoding its own batches on T threads
             (colo's ImageDecoder, as LocalImageLoader uses)
  producer   one `colo loader serve` (the ring in host memory) and P
             consumer processes reading its batches
  producer_gpu  the same with its ring mirrored on --producer-device
plus, paced only, any --variant of the producer's data file (e.g.
`--variant t3:threads=3`: 3 decode threads), each
once as fast as it goes (`busy`) and once paced at --paced of own's
busy rate, so that the cores are partly idle, as in a training run where
the GPU is the limit. The cost counts decode threads' CPU over the samples
decoded in a window of --seconds less --warm: own processes open it --warm
seconds after they start decoding, the producer --warm seconds after it
decodes again once its consumers have read through its first ring fill.
Rounds interleave setups.

  python3 bench/data/decode_cost.py --images DIR --cores 0-3 --colo build/colo --out decode_cost.json
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))
from process_cpu import thread_cpu_s  # noqa: E402
from shared_loading import run_jobs, wait_until_ring_full  # noqa: E402


def paced_reader(args, read_batch):
    """Calls read_batch() for args.seconds, no faster than args.rate samples/s
    (0: as fast as it goes); prints the window's samples, seconds and, for
    own decoding, its decode threads' CPU, as one JSON line."""
    start = time.perf_counter()
    window_start = start + args.warm
    end = start + args.seconds
    marks = None
    batches = 0
    while True:
        now = time.perf_counter()
        if now >= end:
            break
        if marks is None and now >= window_start:
            marks = (now, batches, thread_cpu_s(os.getpid()).get("colo-decode", 0.0))
        if args.rate > 0:
            due = start + batches * args.batch / args.rate
            if due > now:
                time.sleep(min(due, end) - now)
                continue
        read_batch()
        batches += 1
    now = time.perf_counter()
    t0, b0, cpu0 = marks if marks else (start, 0, 0.0)
    print(json.dumps({"samples": (batches - b0) * args.batch, "seconds": now - t0,
                      "decode_cpu_core_s": thread_cpu_s(os.getpid()).get("colo-decode", 0.0) - cpu0}), flush=True)


def own_process(args):
    import torch
    import colo.data
    torch.set_num_threads(1)
    decoder = colo.data._core().ImageDecoder(args.data, args.threads)
    side = decoder.side
    pixels = torch.empty([args.batch, 3, side, side], dtype=torch.uint8)
    labels = torch.empty([args.batch], dtype=torch.int64)
    order = torch.randperm(decoder.size)
    at = [0, 0]  # position in the order, epoch

    def read_batch():
        if at[0] + args.batch > decoder.size:
            at[0], at[1] = 0, at[1] + 1
        decoder.fill(order[at[0]:at[0] + args.batch].contiguous(), at[1], pixels, labels)
        at[0] += args.batch

    paced_reader(args, read_batch)


def consumer_process(args):
    import torch
    import colo.data
    torch.set_num_threads(1)
    loader = colo.data.SharedLoader(args.data, args.batch, device="cpu", timeout=30)
    # The raw pixels, as own decoding leaves them: no normalising here to
    # take cores from the producer.
    pixels = torch.empty([args.batch] + list(loader.client.sample_shape), dtype=torch.uint8)
    labels = torch.empty([args.batch], dtype=torch.int64)
    paced_reader(args, lambda: loader.client.next_batch(pixels, labels))
    loader.close()


def commands(args, role, data, rate, threads=0, seconds=None):
    """args.processes command lines of one role, pinned to args.cores."""
    return [["taskset", "-c", args.cores, sys.executable, HERE, role, "--data", data, "--batch", str(args.batch),
             "--threads", str(threads), "--rate", str(rate), "--seconds", str(seconds or args.seconds),
             "--warm", str(args.warm)]] * args.processes


def producer_counters(colo, address, pid):
    done = subprocess.run([colo, "loader", "status", address, "--timeout", "2"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"colo loader status failed: {done.stderr}")
    return time.perf_counter(), json.loads(done.stdout)["samples"], thread_cpu_s(pid).get("colo-decode", 0.0)


def run_own(args, data, rate):
    results = run_jobs(commands(args, "own", data["own"], rate / args.processes, args.threads), "own decoding")
    samples = sum(r["samples"] for r in results)
    cpu = sum(r["decode_cpu_core_s"] for r in results)
    seconds = statistics.mean(r["seconds"] for r in results)
    return {"samples": samples, "samples_per_s": samples / seconds, "decode_cpu_core_s": cpu,
            "decode_core_ms_per_sample": 1000 * cpu / samples}


def run_producer(args, data, rate, which="producer"):
    consumers = []
    producer = subprocess.Popen(["taskset", "-c", args.cores, args.colo, "loader", "serve", data[which],
                                 "--report", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_ring_full(args.colo, data[which], producer)
        # Every consumer reads every sample the producer decodes once.
        filled = producer_counters(args.colo, data["address"], producer.pid)[1]
        # The consumers read for long enough whatever their start-up takes;
        # they are stopped once the window is measured.
        consumers = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for c in commands(args, "consumer", data[which], rate, seconds=args.seconds + 60)]
        # The window opens --warm seconds after the producer decodes again,
        # the consumers having read their way through its first ring.
        deadline = time.time() + 60
        while producer_counters(args.colo, data["address"], producer.pid)[1] <= filled:
            if time.time() > deadline or any(c.poll() is not None for c in consumers):
                raise SystemExit(f"the producer decoded nothing more for its consumers: "
                                 f"{''.join(c.stderr.read()[-1000:] for c in consumers if c.poll() is not None)}")
            time.sleep(0.1)
        time.sleep(args.warm)
        t0, s0, cpu0 = producer_counters(args.colo, data["address"], producer.pid)
        time.sleep(args.seconds - args.warm)
        t1, s1, cpu1 = producer_counters(args.colo, data["address"], producer.pid)
    finally:
        for c in consumers:
            c.terminate()
            c.communicate()
        producer.send_signal(2)
        producer.communicate(timeout=30)
    samples = s1 - s0
    return {"samples": samples, "samples_per_s": samples / (t1 - t0), "decode_cpu_core_s": cpu1 - cpu0,
            "decode_core_ms_per_sample": 1000 * (cpu1 - cpu0) / samples}


def run(args):
    with tempfile.TemporaryDirectory() as tmp:
        address = f"ipc://{tmp}/producer.sock"
        common = f'root = "{os.path.abspath(args.images)}"\nsize = {args.size}\n'
        data = {"own": os.path.join(tmp, "own.toml"), "producer": os.path.join(tmp, "producer.toml"),
                "address": address}
        with open(data["own"], "w") as f:
            f.write(common + f"threads = {args.threads}\n")
        producer_keys = {"threads": str(args.producer_threads), "chunk": str(args.batch),
                         "buffer": str(args.buffer), "ahead": str(args.ahead), "address": f'"{address}"'}

        def producer_file(name, overrides):
            data[name] = os.path.join(tmp, name + ".toml")
            with open(data[name], "w") as f:
                f.write(common + "".join(f"{k} = {v}\n" for k, v in {**producer_keys, **overrides}.items()))

        producer_file("producer", {})
        variants = {}
        for text in args.variant:
            name, _, keys = text.partition(":")
            variants["producer_paced_" + name] = "producer_" + name
            producer_file("producer_" + name, dict(kv.split("=", 1) for kv in keys.split(",") if kv))
        if args.producer_device:  # its ring mirrored on that GPU (pinned, copied chunk by chunk), as in training runs
            data["producer_gpu"] = os.path.join(tmp, "producer_gpu.toml")
            with open(data["producer_gpu"], "w") as f:
                f.write(open(data["producer"]).read() + f'device = "{args.producer_device}"\n')
        rounds = []
        for r in range(args.repeat):
            row = {"own_busy": run_own(args, data, 0)}
            paced = args.paced * row["own_busy"]["samples_per_s"]
            row["producer_busy"] = run_producer(args, data, 0)
            row["own_paced"] = run_own(args, data, paced)
            row["producer_paced"] = run_producer(args, data, paced)
            if args.producer_device:
                row["producer_gpu_busy"] = run_producer(args, data, 0, "producer_gpu")
                row["producer_gpu_paced"] = run_producer(args, data, paced, "producer_gpu")
            for setup, which in variants.items():
                row[setup] = run_producer(args, data, paced, which)
            rounds.append(row)
            print(f"round {r + 1}: " + ", ".join(
                f"{k} {v['decode_core_ms_per_sample']:.3f} core-ms/sample at {v['samples_per_s']:.0f}/s"
                for k, v in row.items()), flush=True)
        setups = {k: {"decode_core_ms_per_sample_median": statistics.median(
                          row[k]["decode_core_ms_per_sample"] for row in rounds),
                      "samples_per_s_median": statistics.median(row[k]["samples_per_s"] for row in rounds)}
                  for k in rounds[0]}
        summary = {"cores": args.cores, "processes": args.processes, "threads": args.threads,
                   "producer_threads": args.producer_threads, "batch": args.batch, "size": args.size,
                   "paced": args.paced, "seconds": args.seconds, "warm": args.warm, "setups": setups,
                   "rounds": rounds, "command": "python3 " + " ".join(sys.argv)}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)
    for k, v in setups.items():
        print(f"{k:15s} {v['decode_core_ms_per_sample_median']:.3f} core-ms per decoded sample, "
              f"{v['samples_per_s_median']:.0f} samples/s")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--images", required=True)
    r.add_argument("--cores", default="0-1")
    r.add_argument("--colo", default="build/colo")
    r.add_argument("--processes", type=int, default=4, help="own decoding processes, or consumers")
    r.add_argument("--threads", type=int, default=2, help="decode threads per own process")
    r.add_argument("--producer-threads", type=int, default=4)
    r.add_argument("--batch", type=int, default=128, help="samples per batch, and per producer chunk")
    r.add_argument("--buffer", type=int, default=64)
    r.add_argument("--ahead", type=int, default=4)
    r.add_argument("--size", type=int, default=224)
    r.add_argument("--paced", type=float, default=0.6, help="paced setups' rate, a share of own's busy rate")
    r.add_argument("--seconds", type=float, default=8.0)
    r.add_argument("--warm", type=float, default=2.0)
    r.add_argument("--repeat", type=int, default=2)
    r.add_argument("--producer-device", help="also run the producer with its ring on this GPU (e.g. cuda)")
    r.add_argument("--variant", action="append", default=[],
                   help="NAME:KEY=VALUE,...: also a paced producer whose data file sets these keys")
    r.add_argument("--out")
    for role in ("own", "consumer"):
        p = sub.add_parser(role)
        p.add_argument("--data", required=True)
        p.add_argument("--batch", type=int, required=True)
        p.add_argument("--threads", type=int, default=0)
        p.add_argument("--rate", type=float, default=0.0)
        p.add_argument("--seconds", type=float, required=True)
        p.add_argument("--warm", type=float, required=True)
    args = parser.parse_args()
    {"run": run, "own": own_process, "consumer": consumer_process}[args.what](args)


if __name__ == "__main__":
    main()
