"""colo.Client: colod's HTTP/JSON API from Python, the operations of
`colo submit`, `queue`, `show`, `cancel` and `logs`.

    client = colo.Client()                       # finds the running colod
    ids = client.submit(["python3", "train.py"], mem="6GiB", sm_share=0.3)
    client.queue()                               # list of job records (dicts)
    client.show(ids[0]); client.logs(ids[0]); client.cancel(ids[0])

colod publishes where it listens in <state dir>/colod.json and its token in
<state dir>/token; the state directory is $XDG_STATE_HOME/colo (default
~/.local/state/colo), as for the CLI.
"""
import json
import os
import urllib.error
import urllib.request


class ColoError(RuntimeError):
    """colod refused a request or cannot be reached; the message says why."""


def state_directory():
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.environ.get("HOME", "/tmp"), ".local", "state")
    return os.path.join(base, "colo")


def _parse_bytes(text):
    units = {"": 1, "B": 1, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "K": 2**10, "M": 2**20,
             "G": 2**30, "T": 2**40, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
    number = text.strip().upper().rstrip("BITGMK")
    unit = text.strip().upper()[len(number):]
    try:
        return int(float(number) * units[unit.strip()])
    except (KeyError, ValueError):
        raise ValueError(f"colo.Client: expected a size such as '6GiB', got {text!r}") from None


class Client:
    """One colod. Every method raises ColoError with colod's message when it refuses."""

    def __init__(self, url=None, token=None, state_dir=None, timeout_s=30):
        state_dir = state_dir or state_directory()
        if url is None:
            info_path = os.path.join(state_dir, "colod.json")
            try:
                info = json.load(open(info_path))
            except (OSError, ValueError) as e:
                raise ColoError(f"no running colod: cannot read {info_path} ({e}); start build/colod") from None
            url = f"http://{info.get('host', '127.0.0.1')}:{info['port']}"
        if token is None:
            token_path = os.path.join(state_dir, "token")
            try:
                token = open(token_path).read().strip()
            except OSError as e:
                raise ColoError(f"cannot read colod's token {token_path}: {e}") from None
        self.url, self._token, self._timeout_s = url.rstrip("/"), token, timeout_s

    def _request(self, method, path, body=None, raw=False):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {self._token}",
                                                  "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                payload = response.read()
                return (payload.decode(errors="replace"), dict(response.headers)) if raw else json.loads(payload)
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                text = json.loads(text).get("error", text)
            except ValueError:
                pass
            raise ColoError(f"colod: {e.code}: {text.strip()}") from None
        except urllib.error.URLError as e:
            raise ColoError(f"colod at {self.url} cannot be reached: {e.reason}") from None

    def submit(self, command, name=None, workdir=None, env=None, mem=None, sm_share=None, priority=0, model=None):
        """Submits one job; returns its ids. `command` is an argv list or a shell line; `mem` a size
        ('6GiB') or bytes; `model` a dict like a job file's [job.model] (builder, input, batch_size,
        optimizer, vocab) for a memory estimate when `mem` is not given."""
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        job = {"name": name or (command if isinstance(command, str) else argv[0])[:40], "command": argv,
               "workdir": os.path.abspath(workdir or os.getcwd()), "env": dict(env or {}), "priority": priority}
        if mem is not None:
            job["mem_bytes"] = mem if isinstance(mem, int) else _parse_bytes(mem)
        if sm_share is not None:
            job["sm_share"] = float(sm_share)
        if model is not None:
            job["model"] = dict(model)
        return self._request("POST", "/jobs", job)["ids"]

    def queue(self, state=None):
        """Every job as a record (dict), optionally of one state ('RUNNING', ...)."""
        return self._request("GET", "/jobs" + (f"?state={state}" if state else ""))

    def show(self, job_id):
        return self._request("GET", f"/jobs/{int(job_id)}")

    def cancel(self, job_id):
        return self._request("POST", f"/jobs/{int(job_id)}/cancel", {})

    def logs(self, job_id, offset=0):
        """The job's output from byte `offset`."""
        text, _ = self._request("GET", f"/jobs/{int(job_id)}/log?offset={int(offset)}", raw=True)
        return text
