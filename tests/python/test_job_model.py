"""Jobs that are Python scripts get memory estimates from their model ([job.model])."""
import json
import os
import subprocess
import textwrap
import time

import torch
import torch.nn as nn

import colo

MODEL_CODE = textwrap.dedent("""
    import torch.nn as nn

    def build():
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))

    def broken():
        raise RuntimeError("the checkpoint is missing")
""")


def submit(colo_executable, tmp_path, job_toml):
    (tmp_path / "mymodels.py").write_text(MODEL_CODE)
    (tmp_path / "jobs.toml").write_text(job_toml)
    return subprocess.run([colo_executable, "submit", "--store", str(tmp_path / "jobs.db"),
                           "--file", str(tmp_path / "jobs.toml")], capture_output=True, text=True)


def schedule(colo_executable, tmp_path):
    """Runs the submitted jobs on a simulated GPU: the scheduler estimates
    their models in the background once they are queued. Its log is
    `run.err`, which a job's command may wait on (until_logged)."""
    log = tmp_path / "run.err"
    with open(log, "w") as err:
        run = subprocess.run([colo_executable, "run", "--store", str(tmp_path / "jobs.db"), "--poll", "0.1"],
                             stderr=err, text=True, env={**os.environ, "COLO_SIMULATED_GPUS": "1"}, timeout=300)
    text = log.read_text()
    assert run.returncode == 0, text
    return text


def until_logged(tmp_path, *texts):
    """A job's command that ends once the scheduler's log holds every one of
    `texts` (at most 120 s): a job that starts before its estimate arrives
    still sees it arrive."""
    found = " && ".join(f"grep -q '{text}' {tmp_path}/run.err" for text in texts)
    return f"for i in $(seq 1200); do {found} && break; sleep 0.1; done"


def show(colo_executable, tmp_path, job_id):
    run = subprocess.run([colo_executable, "show", "--store", str(tmp_path / "jobs.db"), str(job_id)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_job_file_model_gets_the_python_estimate(tmp_path, colo_executable):
    run = submit(colo_executable, tmp_path, f"""
[[job]]
name = "mlp"
command = "{until_logged(tmp_path, 'needs about')}"
workdir = "{tmp_path}"
[job.model]
builder = "mymodels:build"
input = [1, 28, 28]
batch_size = 512
optimizer = "sgd"
""")
    assert run.returncode == 0, run.stderr
    assert "mem_bytes" not in show(colo_executable, tmp_path, 1)["spec"], "submitting does not wait for the estimate"
    assert "(mlp) needs about" in schedule(colo_executable, tmp_path)
    stored = show(colo_executable, tmp_path, 1)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    found = colo.estimate(model, torch.randn(1, 1, 28, 28), batch_size=512, optimizer="sgd")
    assert found.uncertainty > 0 and found.bytes_high == found.bytes + found.uncertainty
    expected = found.bytes_high  # what the scheduler places by: the high bound, plus 10%
    assert stored["spec"]["model"]["builder"] == "mymodels:build"
    assert abs(stored["spec"]["mem_bytes"] - 1.10 * expected) <= 0.01 * expected


def test_model_that_cannot_be_built_leaves_memory_unknown_and_says_why(tmp_path, colo_executable):
    run = submit(colo_executable, tmp_path, f"""
command = "{until_logged(tmp_path, 'memory need unknown')}"
workdir = "{tmp_path}"
[model]
builder = "mymodels:broken"
input = [784]
""")
    assert run.returncode == 0, run.stderr
    scheduled = schedule(colo_executable, tmp_path)
    assert "memory need unknown" in scheduled and "the checkpoint is missing" in scheduled
    assert "mem_bytes" not in show(colo_executable, tmp_path, 1)["spec"]


def test_malformed_model_table_changes_nothing(tmp_path, colo_executable):
    run = submit(colo_executable, tmp_path, """
command = "python3 train.py"
[model]
builder = "mymodels:build"
""")
    assert run.returncode == 2
    assert "model.input" in run.stderr
    assert not (tmp_path / "jobs.db").exists()


BF16_CODE = textwrap.dedent("""
    import torch
    import torch.nn as nn

    def build():
        return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10)).to(torch.bfloat16)

    def build_lm():
        class Lm(nn.Module):
            def __init__(self):
                super().__init__()
                self.tokens = nn.Embedding(100, 32)
                self.head = nn.Linear(32, 100)

            def forward(self, ids):
                return self.head(self.tokens(ids))

        return Lm().to(torch.bfloat16)

    def build_half():
        return build().half()
""")


def test_a_bfloat16_builders_model_gets_bfloat16_inputs_and_token_ids_stay_integer(tmp_path, colo_executable):
    """The example input was float32 whatever the model, so a bfloat16
    model failed ("mat1 and mat2 must have the same dtype") and the job's
    memory stayed unknown. Now a float input takes the dtype of the model's
    first floating parameter; token ids stay int64. A float16 model (recorded
    as bfloat16 on a CPU without float16 kernels) needs what the bfloat16 one does."""
    (tmp_path / "halfmodels.py").write_text(BF16_CODE)
    (tmp_path / "jobs.toml").write_text(f"""
[[job]]
name = "bf16-mlp"
command = "{until_logged(tmp_path, 'bf16-mlp) needs about', 'bf16-lm) needs about', 'fp16-mlp) needs about')}"
workdir = "{tmp_path}"
[job.model]
builder = "halfmodels:build"
input = [64]
batch_size = 1024
optimizer = "adam"

[[job]]
name = "bf16-lm"
command = "true"
workdir = "{tmp_path}"
[job.model]
builder = "halfmodels:build_lm"
input = [16]
vocab = 100
batch_size = 64
optimizer = "adam"

[[job]]
name = "fp16-mlp"
command = "true"
workdir = "{tmp_path}"
[job.model]
builder = "halfmodels:build_half"
input = [64]
batch_size = 1024
optimizer = "adam"
""")
    run = subprocess.run([colo_executable, "submit", "--store", str(tmp_path / "jobs.db"),
                          "--file", str(tmp_path / "jobs.toml")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    scheduled = schedule(colo_executable, tmp_path)
    assert "memory need unknown" not in scheduled, scheduled
    mlp = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 10)).to(torch.bfloat16)
    expected = colo.estimate(mlp, torch.randn(1, 64, dtype=torch.bfloat16), batch_size=1024,
                             optimizer="adam").bytes_high
    stored = show(colo_executable, tmp_path, 1)["spec"]["mem_bytes"]
    assert abs(stored - 1.10 * expected) <= 0.01 * expected
    assert "mem_bytes" in show(colo_executable, tmp_path, 2)["spec"]
    assert show(colo_executable, tmp_path, 3)["spec"]["mem_bytes"] == stored


SLOW_MODEL_CODE = textwrap.dedent("""
    import os
    import time

    import torch.nn as nn

    def slow():
        # Says it is being estimated, then waits (60 s at most) for the test's go-ahead.
        open("estimating", "w").close()
        for _ in range(600):
            if os.path.exists("estimate-may-finish"):
                break
            time.sleep(0.1)
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.Linear(64, 10))
""")


def test_kill_nine_of_colo_run_while_it_estimates_loses_no_job_and_runs_none_twice(tmp_path, colo_executable):
    """colo run killed while the scheduler's estimate of a [job.model] table
    is still running (and the first job, started on the empty GPU before
    its estimate, still runs): restarted with the same file, it resumes the
    queued jobs and every job runs exactly once."""
    (tmp_path / "slowmodels.py").write_text(SLOW_MODEL_CODE)
    (tmp_path / "jobs.toml").write_text(f"""
[[job]]
name = "tune"
array = "0-3"
command = "echo $COLO_ARRAY_INDEX >> {tmp_path}/ledger; for i in $(seq 600); do [ -e estimate-may-finish ] && break; sleep 0.1; done"
workdir = "{tmp_path}"
[job.model]
builder = "slowmodels:slow"
input = [1, 28, 28]
batch_size = 64
optimizer = "sgd"
""")
    argv = [colo_executable, "run", str(tmp_path / "jobs.toml"), "--store", str(tmp_path / "jobs.db"), "--poll", "0.1"]
    env = {**os.environ, "COLO_SIMULATED_GPUS": "1"}
    with open(tmp_path / "first.err", "w") as err:
        first = subprocess.Popen(argv, stderr=err, env=env)
        for _ in range(1200):
            if (tmp_path / "estimating").exists() or first.poll() is not None:
                break
            time.sleep(0.1)
        assert (tmp_path / "estimating").exists(), (tmp_path / "first.err").read_text()
        first.kill()
        first.wait()
    (tmp_path / "estimate-may-finish").touch()
    second = subprocess.run(argv + ["--summary-json", str(tmp_path / "sum.json")], capture_output=True, text=True,
                            env=env, timeout=300)
    assert second.returncode == 0, second.stderr + (tmp_path / "first.err").read_text()
    assert "before (4 job(s), ids 1-4); resuming them" in second.stderr, second.stderr
    summary = json.loads((tmp_path / "sum.json").read_text())
    assert summary["jobs"] == 4 and summary["completed"] == 4, summary
    runs = (tmp_path / "ledger").read_text().split()
    assert sorted(runs) == ["0", "1", "2", "3"], runs


FINE_TUNE_CODE = textwrap.dedent("""
    import torch
    import torch.nn as nn
    import colo.fuse

    def one(index=0):
        torch.manual_seed(0)  # one pretrained backbone: equal frozen weights in every model
        backbone = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                                 nn.Linear(1024, 4096), nn.ReLU())
        for p in backbone.parameters():
            p.requires_grad_(False)
        torch.manual_seed(1 + index)
        return nn.Sequential(backbone, nn.Linear(4096, 10))

    def array8():
        return colo.fuse.fuse(one, 8)
""")


def test_a_fused_fine_tuning_array_is_placed_by_its_estimate_with_the_frozen_backbone_once(tmp_path, colo_executable):
    """A job whose [job.model] builder returns a colo.fuse array of 8
    fine-tunes of one frozen backbone reserves the array's estimate: the
    backbone's weights and its forward counted once, not 8 times."""
    (tmp_path / "finetunes.py").write_text(FINE_TUNE_CODE)
    table = 'workdir = "{}"\n[job.model]\nbuilder = "finetunes:{}"\ninput = [3, 32, 32]\nbatch_size = 64\n' \
            'optimizer = "adam"\n'
    (tmp_path / "jobs.toml").write_text("".join(
        f'[[job]]\nname = "{name}"\ncommand = "{until_logged(tmp_path, "one) needs about", "array8) needs about")}"\n'
        + table.format(tmp_path, name) for name in ("one", "array8")))
    run = subprocess.run([colo_executable, "submit", "--store", str(tmp_path / "jobs.db"),
                          "--file", str(tmp_path / "jobs.toml")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    log = schedule(colo_executable, tmp_path)
    assert "(array8) needs about" in log, log
    one_mem, array_mem = (show(colo_executable, tmp_path, i)["spec"]["mem_bytes"] for i in (1, 2))

    import sys
    sys.path.insert(0, str(tmp_path))
    import finetunes
    x = torch.randn(1, 3, 32, 32)
    fused = colo.estimate(finetunes.array8(), x, batch_size=64, optimizer="adam")
    stacked = colo.estimate(colo.fuse.fuse(finetunes.one, 8, share_frozen=False), x, batch_size=64, optimizer="adam")
    assert abs(array_mem - 1.10 * fused.bytes_high) <= 0.01 * fused.bytes_high, (array_mem, fused.bytes_high)
    backbone_bytes = sum(p.numel() * 4 for p in finetunes.one()[0].parameters())
    assert stacked.bytes - fused.bytes >= 7 * backbone_bytes, (stacked.breakdown, fused.breakdown)
    # Beside one fine-tune alone: 7 more heads, their Adam states and outputs,
    # less than half of what 7 more backbones' weights alone would add.
    assert array_mem - one_mem < 3.5 * backbone_bytes, (array_mem, one_mem, backbone_bytes)


HANGING_MODEL_CODE = textwrap.dedent("""
    import time

    def hangs():
        time.sleep(600)  # a builder that waits for a checkpoint that never comes
""")


def test_a_builder_that_hangs_is_cut_at_the_estimate_timeout_and_its_job_runs_as_one_of_unknown_memory(
        tmp_path, colo_executable):
    """`--estimate-timeout`: past it the estimate is unknown, the child is
    stopped, and the job runs anyway (started on the empty GPU at once, as a
    job of unknown memory) instead of waiting for its builder."""
    (tmp_path / "hanging.py").write_text(HANGING_MODEL_CODE)
    (tmp_path / "jobs.toml").write_text(f"""
[[job]]
name = "stuck-builder"
command = "{until_logged(tmp_path, 'took over the time limit')}"
workdir = "{tmp_path}"
[job.model]
builder = "hanging:hangs"
input = [8]
batch_size = 4
optimizer = "sgd"
""")
    log = tmp_path / "run.err"
    started = time.monotonic()
    with open(log, "w") as err:
        run = subprocess.run([colo_executable, "run", str(tmp_path / "jobs.toml"), "--store", str(tmp_path / "jobs.db"),
                              "--poll", "0.1", "--estimate-timeout", "8"], stderr=err, text=True,
                             env={**os.environ, "COLO_SIMULATED_GPUS": "1"}, timeout=300)
    text = log.read_text()
    assert run.returncode == 0, text
    assert time.monotonic() - started < 60, "cut at the timeout, not after the builder's 600 s"
    assert "stuck-builder): memory need unknown (estimating hanging:hangs took over the time limit)" in text, text
    assert show(colo_executable, tmp_path, 1)["state"] == "COMPLETED"
    leftover = subprocess.run(["pgrep", "-f", "builder hanging:hangs"], capture_output=True, text=True)
    assert leftover.stdout.strip() == "", "the estimating child was stopped: " + leftover.stdout


def test_a_kill_9_of_colo_run_while_models_are_estimated_loses_no_job_runs_none_twice_and_leaves_no_estimator(
        tmp_path, colo_executable):
    """Issue 49's fault: `kill -9` of colo run while two jobs wait for their
    model's estimate (the GPU is busy with a third). The estimating child
    ends with it; the restarted run resumes the store, and each job runs
    exactly once."""
    (tmp_path / "hanging_kill.py").write_text(HANGING_MODEL_CODE)
    runs = tmp_path / "runs.txt"
    record = f"echo $COLO_JOB_ID >> {runs}"
    jobs = f"""
[[job]]
name = "first"
command = "sleep 4; {record}"
mem = "1GiB"
workdir = "{tmp_path}"
"""
    for name in ("second", "third"):
        jobs += f"""
[[job]]
name = "{name}"
command = "{record}"
workdir = "{tmp_path}"
[job.model]
builder = "hanging_kill:hangs"
input = [8]
batch_size = 4
optimizer = "sgd"
"""
    (tmp_path / "jobs.toml").write_text(jobs)
    env = {**os.environ, "COLO_SIMULATED_GPUS": "1"}
    store = str(tmp_path / "jobs.db")
    estimator = ["pgrep", "-f", "builder hanging_kill:hangs"]
    with open(tmp_path / "run1.err", "w") as err:
        first = subprocess.Popen([colo_executable, "run", str(tmp_path / "jobs.toml"), "--store", store, "--poll", "0.1",
                                  "--estimate-timeout", "600"], stderr=err, env=env)
    for _ in range(200):  # until the estimate is under way
        if subprocess.run(estimator, capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    else:
        first.kill()
        raise AssertionError("no estimate started: " + (tmp_path / "run1.err").read_text())
    first.kill()  # SIGKILL
    first.wait()
    time.sleep(0.5)
    assert subprocess.run(estimator, capture_output=True).returncode == 1, "the estimating child ended with colo run"
    with open(tmp_path / "run.err", "w") as err:
        again = subprocess.run([colo_executable, "run", "--store", store, "--poll", "0.1", "--estimate-timeout", "3"],
                               stderr=err, env=env, timeout=120)
    text = (tmp_path / "run.err").read_text()
    assert again.returncode == 0, text
    assert sorted(runs.read_text().split()) == ["1", "2", "3"], "each job ran once: " + runs.read_text()
    for job_id in (1, 2, 3):
        assert show(colo_executable, tmp_path, job_id)["state"] == "COMPLETED"
