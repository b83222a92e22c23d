"""Jobs that are Python scripts get memory estimates from their model ([job.model])."""
import json
import subprocess
import textwrap

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


def show(colo_executable, tmp_path, job_id):
    run = subprocess.run([colo_executable, "show", "--store", str(tmp_path / "jobs.db"), str(job_id)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def test_job_file_model_gets_the_python_estimate(tmp_path, colo_executable):
    run = submit(colo_executable, tmp_path, f"""
[[job]]
name = "mlp"
command = "python3 train.py"
workdir = "{tmp_path}"
[job.model]
builder = "mymodels:build"
input = [1, 28, 28]
batch_size = 512
optimizer = "sgd"
""")
    assert run.returncode == 0, run.stderr
    assert "mlp needs about" in run.stderr
    stored = show(colo_executable, tmp_path, 1)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    expected = colo.estimate(model, torch.randn(1, 1, 28, 28), batch_size=512, optimizer="sgd").bytes
    assert stored["spec"]["model"]["builder"] == "mymodels:build"
    assert abs(stored["spec"]["mem_bytes"] - 1.10 * expected) <= 0.01 * expected


def test_model_that_cannot_be_built_leaves_memory_unknown_and_says_why(tmp_path, colo_executable):
    run = submit(colo_executable, tmp_path, f"""
command = "python3 train.py"
workdir = "{tmp_path}"
[model]
builder = "mymodels:broken"
input = [784]
""")
    assert run.returncode == 0, run.stderr
    assert "memory need unknown" in run.stderr and "the checkpoint is missing" in run.stderr
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
