"""What a fatal GPU fault in one job does to a shared loader's producer
under MPS: starts a private MPS daemon, a producer with a device ring, one
consumer reading on, and a job that trips a device-side assert; then asks
who is still alive and whether the GPU takes a new MPS client. Prints one
JSON object. --fault assert: a device-side assert (an index out of range in
a PyTorch kernel); --fault illegal-address: a kernel writing to address 8
(an MMU fault; tests/python/illegal_address_job.py).

    python3 bench/data/mps_fault_probe.py --colo build-gpu/colo [--fault assert|illegal-address] [--out FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--colo", required=True)
    parser.add_argument("--out")
    parser.add_argument("--fault", choices=("assert", "illegal-address"), default="assert")
    parser.add_argument("--wait", type=float, default=8.0, help="seconds to watch after the fault")
    args = parser.parse_args()
    top = tempfile.mkdtemp(prefix="colo-mps-fault-")
    pipe, logs = os.path.join(top, "pipe"), os.path.join(top, "log")
    os.makedirs(pipe)
    os.makedirs(logs)
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": pipe, "CUDA_MPS_LOG_DIRECTORY": logs}
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
    report = {}
    procs = []
    try:
        subprocess.run([args.colo, "loader", "write-images", "--source", "synthetic", "--limit", "300", "--size", "32",
                        "--out", os.path.join(top, "images")], check=True, capture_output=True)
        data = os.path.join(top, "data.toml")
        with open(data, "w") as f:
            f.write('root = "images"\nsize = 24\nthreads = 1\nchunk = 16\nbuffer = 8\nahead = 4\n'
                    'stall_s = 1\nheartbeat_timeout_s = 1\ndevice = "cuda"\n'
                    f'address = "ipc://{top}/loader.sock"\n')
        producer = subprocess.Popen([args.colo, "loader", "serve", data, "--report", "0"], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(producer)
        status = [args.colo, "loader", "status", f"ipc://{top}/loader.sock", "--timeout", "1"]
        for _ in range(100):
            if subprocess.run(status, capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        reader_code = textwrap.dedent(f"""\
            import sys, time, colo.data
            loader = colo.data.SharedLoader({data!r}, 8, device="cuda", timeout=3)
            print("ready", loader.reads_device_ring, flush=True)
            n = 0
            try:
                while True:
                    loader.next_batch()[0].sum().item()
                    n += 1
                    time.sleep(0.01)
            except BaseException as e:
                print("reader ended after", n, "batches:", type(e).__name__, str(e)[:300], flush=True)
                sys.exit(3)
            """)
        reader = subprocess.Popen([sys.executable, "-c", reader_code], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        procs.append(reader)
        report["reader_start"] = reader.stdout.readline().strip()
        time.sleep(1)
        if args.fault == "assert":
            job = ["-c", "import torch; x = torch.zeros(4, device='cuda'); "
                   "x[torch.tensor([40], device='cuda')] = 1; torch.cuda.synchronize(); print('no fault')"]
        else:
            here = os.path.dirname(os.path.abspath(__file__))
            job = [os.path.join(here, "..", "..", "tests", "python", "illegal_address_job.py")]
        report["fault"] = args.fault
        fault = subprocess.run([sys.executable] + job, env=env, capture_output=True, text=True, timeout=120)
        report["faulting_job"] = {"rc": fault.returncode, "stderr_tail": fault.stderr.strip()[-400:],
                                  "stdout": fault.stdout.strip()}
        time.sleep(args.wait)
        report["after_fault"] = {
            "reader_alive": reader.poll() is None, "producer_alive": producer.poll() is None,
            "producer_status_rc": subprocess.run(status, capture_output=True).returncode}

        def new_client():
            try:
                r = subprocess.run([sys.executable, "-c", "import torch; print(torch.ones(2, device='cuda').sum().item())"],
                                   env=env, capture_output=True, text=True, timeout=40)
                return {"rc": r.returncode, "out": r.stdout.strip(), "err": r.stderr.strip()[-300:]}
            except subprocess.TimeoutExpired:
                return {"rc": None, "timeout": True}

        report["new_client_with_producer_and_reader"] = new_client()
        if reader.poll() is None:
            reader.kill()
        out, err = reader.communicate(timeout=30)
        report["reader"] = {"rc": reader.returncode, "out": out.strip()[-400:], "err": err.strip()[-400:]}
        time.sleep(2)
        report["producer_alive_after_reader_gone"] = producer.poll() is None
        report["new_client_with_producer_only"] = new_client()
        if producer.poll() is None:
            producer.kill()
        out, err = producer.communicate(timeout=30)
        report["producer"] = {"rc": producer.returncode, "err": err.strip()[-600:]}
        time.sleep(2)
        report["new_client_after_all_gone"] = new_client()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", env=env, text=True)
        try:
            report["mps_server_log_tail"] = open(os.path.join(logs, "server.log")).read()[-1500:]
        except OSError:
            pass
    print(json.dumps(report, indent=1))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
