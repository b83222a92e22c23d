"""CPU seconds of processes and threads, read from /proc (Linux): what the
shared-loading benchmarks charge each job, the producer and an MPS
server."""
import os
import threading
import time

CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid, stat="stat"):
    """User + system CPU seconds of one live process (all its threads), or of
    one thread with stat="task/TID/stat"; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/{stat}") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def thread_cpu_s(pid):
    """CPU seconds of a live process's threads, summed by thread name
    (colo's producer names its decode, assemble and mirror threads)."""
    by_name = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return by_name
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
        except OSError:
            continue
        by_name[name] = by_name.get(name, 0.0) + process_cpu_s(pid, f"task/{tid}/stat")
    return by_name


def tree_cpu_s(root):
    """CPU seconds of process `root` and its live descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += process_cpu_s(pid)
        todo.extend(children.get(pid, []))
    return total


class CpuSampler:
    """Samples a process's CPU seconds per thread name every 50 ms, from
    its start; threads_between(t0, t1) gives what each name used between."""

    def __init__(self, pid):
        self.pid, self.threads, self.stop = pid, [], threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            threads = thread_cpu_s(self.pid)
            if threads:  # none once it has exited: its last reading stands
                self.threads.append((time.time(), threads))
            self.stop.wait(0.05)

    def threads_between(self, t0, t1):
        """CPU seconds per thread name from the last sample at or before t0
        to the first at or after t1 (a span at most 50 ms wider)."""
        before = [s for s in self.threads if s[0] <= t0] or self.threads[:1]
        after = [s for s in self.threads if s[0] >= t1] or self.threads[-1:]
        start, end = before[-1][1], after[0][1]
        return {name: end[name] - start.get(name, 0.0) for name in sorted(end)}

    def finish(self):
        self.stop.set()
        self.thread.join()


def mps_server_pids(pipe_dir):
    """The pids of the MPS servers whose daemon listens on `pipe_dir` (their
    CUDA_MPS_PIPE_DIRECTORY): none before its first client."""
    wanted = f"CUDA_MPS_PIPE_DIRECTORY={pipe_dir}".encode()
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if not f.read().split(b"\0")[0].endswith(b"nvidia-cuda-mps-server"):
                    continue
            with open(f"/proc/{entry}/environ", "rb") as f:
                if wanted not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        pids.append(int(entry))
    return pids
