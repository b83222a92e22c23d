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
import math
import numbers
import os
import urllib.error
import urllib.parse
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
        return _checked_bytes(float(number) * units[unit.strip()], text)
    except (KeyError, ValueError):
        raise ValueError(f"colo.Client: mem: expected a size such as '6GiB', got {text!r}") from None


def _checked_bytes(value, given):
    """A byte count colod can store (0 <= value < 2**63), else ValueError."""
    if not math.isfinite(value) or value < 0 or value >= 2**63:
        raise ValueError(f"colo.Client: mem must be a size from 0 to 8 EiB, got {given!r}")
    return int(value)


def _mem_bytes(mem):
    """`mem` as bytes: a size string ('6GiB') or a number of bytes (int or float, 6e9)."""
    if isinstance(mem, str):
        return _parse_bytes(mem)
    if isinstance(mem, numbers.Real) and not isinstance(mem, bool):
        return _checked_bytes(float(mem), mem)
    raise ValueError(f"colo.Client: mem must be a size such as '6GiB' or a number of bytes, got {mem!r}")


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
        except OSError as e:  # a timeout or a reset connection while reading the answer
            raise ColoError(f"colod at {self.url} did not answer {method} {path}: {e}") from None

    def submit(self, command, name=None, workdir=None, env=None, mem=None, sm_share=None, priority=0, model=None,
               gpus=1):
        """Submits one job; returns its ids. `command` is an argv list or a shell line; `mem` a size
        ('6GiB') or bytes (per GPU); `gpus` how many GPUs it runs on at once (gang-placed, as
        `colo submit --gpus`); `model` a dict like a job file's [job.model] (builder, input, batch_size,
        optimizer, vocab) for a memory estimate when `mem` is not given. A value of the wrong kind
        raises ValueError before anything is sent."""
        argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
        if isinstance(gpus, bool) or not isinstance(gpus, numbers.Integral) or gpus < 1:
            raise ValueError(f"colo.Client: gpus must be an int >= 1, got {gpus!r}")
        if isinstance(priority, bool) or not isinstance(priority, numbers.Integral) or \
                not -1000000 <= priority <= 1000000:
            raise ValueError(f"colo.Client: priority must be an int in [-1000000, 1000000], got {priority!r}")
        env = dict(env or {})
        for key, value in env.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise ValueError(f"colo.Client: env must map strings to strings, got {key!r}: {value!r}")
        job = {"name": name or (command if isinstance(command, str) else argv[0])[:40], "command": argv,
               "workdir": os.path.abspath(workdir or os.getcwd()), "env": env, "gpus": int(gpus),
               "priority": int(priority)}
        if mem is not None:
            job["mem_bytes"] = _mem_bytes(mem)
        if sm_share is not None:
            # colod judges the range; NaN or infinity would not even be JSON
            if isinstance(sm_share, bool) or not isinstance(sm_share, numbers.Real) or not math.isfinite(sm_share):
                raise ValueError(f"colo.Client: sm_share must be a number in [0, 1], got {sm_share!r}")
            job["sm_share"] = float(sm_share)
        if model is not None:
            job["model"] = dict(model)
        return self._request("POST", "/jobs", job)["ids"]

    def queue(self, state=None):
        """Every job as a record (dict), optionally of some states: 'RUNNING', 'PENDING,RUNNING' or
        a list such as ['PENDING', 'RUNNING']."""
        if state is not None and not isinstance(state, str):
            state = ",".join(state)
        return self._request("GET", "/jobs" + (f"?state={urllib.parse.quote(state, safe=',')}" if state else ""))

    def show(self, job_id):
        return self._request("GET", f"/jobs/{int(job_id)}")

    def cancel(self, job_id):
        return self._request("POST", f"/jobs/{int(job_id)}/cancel", {})

    def logs(self, job_id, offset=0):
        """The job's output from byte `offset`."""
        text, _ = self._request("GET", f"/jobs/{int(job_id)}/log?offset={int(offset)}", raw=True)
        return text
