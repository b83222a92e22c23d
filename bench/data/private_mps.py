"""A private CUDA MPS daemon for one benchmark round.

The daemon (and the MPS server it starts for the first client) gets its own
pipe and log folders, is pinned to the round's cores like the jobs, and is
always told to quit, so no server outlives the round or serves another
user's processes. Its processes inherit the CUDA_MPS_* variables from
os.environ, set while the daemon is up.
"""
import os
import shutil
import subprocess
import tempfile

VARIABLES = ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY")


class PrivateMps:
    """`with PrivateMps(cores) as mps:` processes started inside are MPS
    clients of a daemon of their own."""

    def __init__(self, cores):
        self.cores, self.dir, self.saved = cores, None, {}

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="colo-mps-")
        paths = dict(zip(VARIABLES, (os.path.join(self.dir, "pipe"), os.path.join(self.dir, "log"))))
        for path in paths.values():
            os.makedirs(path)
        self.saved = {name: os.environ.get(name) for name in VARIABLES}
        os.environ.update(paths)
        try:
            subprocess.run(["taskset", "-c", self.cores, "nvidia-cuda-mps-control", "-d"], check=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as e:
            self._restore()
            shutil.rmtree(self.dir, ignore_errors=True)
            raise SystemExit(f"could not start an MPS daemon in {self.dir}: {e}")
        return self

    def server_pids(self):
        """The pids of this daemon's MPS server (none before the first client)."""
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if not f.read().split(b"\0")[0].endswith(b"nvidia-cuda-mps-server"):
                        continue
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if f"CUDA_MPS_PIPE_DIRECTORY={os.environ[VARIABLES[0]]}".encode() not in f.read().split(b"\0"):
                        continue
            except OSError:
                continue
            pids.append(int(entry))
        return pids

    def __exit__(self, *exc):
        try:
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True, timeout=30,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            self._restore()
            shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def _restore(self):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
