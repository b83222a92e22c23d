"""A sweep of the user's own model as a `colo compare` workload: the script
calls colo.fuse.compare_workload, colo compare asks it how many
configurations it has, runs each alone for the process levels and all of
them fused for the fused level, and counts samples from their sweep logs."""
import json
import os
import subprocess
import sys
import textwrap

import colo.fuse as cf

SCRIPT = textwrap.dedent("""
    import torch
    import colo.fuse

    def build(width=8):
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(36, width), torch.nn.ReLU(),
                                   torch.nn.Linear(width, 4))

    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(256, 1, 6, 6, generator=g), torch.randint(0, 4, (256,), generator=g)
    train = [(x[i:i + 32], y[i:i + 32]) for i in range(0, 256, 32)]
    colo.fuse.compare_workload(build, {"lr": [0.01, 0.1], "width": [8, 16]}, train, train[:2], epochs=2,
                               device="cpu", on_epoch=None)
""")


def run_compare(colo_executable, tmp_path, script, *args):
    env = dict(os.environ, COLO_PYTHON=sys.executable)
    return subprocess.run([colo_executable, "compare", str(script), "--repeat", "1", "--no-plots", "--out",
                           str(tmp_path / "out"), *args], capture_output=True, text=True, env=env, timeout=600)


def level(summary, name):
    return next(lv for lv in summary["levels"] if lv["level"] == name)


def test_a_python_sweep_runs_one_configuration_per_process_and_all_fused(tmp_path, colo_executable):
    script = tmp_path / "my_sweep.py"
    script.write_text(SCRIPT)
    run = run_compare(colo_executable, tmp_path, script, "--levels", "sequential,fused,streams", "--steps", "3")
    assert run.returncode == 0, run.stderr + run.stdout
    summary = json.load(open(tmp_path / "out" / "summary.json"))
    assert summary["kind"] == "python" and summary["jobs"] == 4
    # 4 configurations x 3 steps x 32 samples, counted from the runs' sweep logs.
    assert level(summary, "sequential")["runs"][0]["samples"] == 4 * 3 * 32
    assert level(summary, "fused")["runs"][0]["samples"] == 4 * 3 * 32
    assert "side by side" in level(summary, "streams")["skipped"]
    # Each process of the sequential level trained its own configuration alone.
    for i in range(4):
        log = tmp_path / "out" / "round-1" / "sequential" / f"config-{i}" / "sweep.jsonl"
        models = {json.loads(line)["model"] for line in open(log)}
        assert models == {i}, (i, models)


def test_a_script_that_does_not_call_compare_workload_is_named(tmp_path, colo_executable):
    script = tmp_path / "plain.py"
    script.write_text("print('hello')\n")
    run = run_compare(colo_executable, tmp_path, script)
    assert run.returncode == 2, run.stderr
    assert "compare_workload" in run.stderr and "plain.py" in run.stderr


def test_sweep_trains_only_the_named_configurations_for_at_most_max_steps(tmp_path):
    import torch
    train = [(torch.randn(16, 4), torch.randint(0, 3, (16,))) for _ in range(5)]
    ranked = cf.sweep(lambda: torch.nn.Linear(4, 3), {"lr": [0.1, 0.2, 0.3]}, train, train[:1], epochs=3,
                      only=[2], max_steps=7, on_epoch=None, device="cpu", out=str(tmp_path))
    assert [r["model"] for r in ranked] == [2]
    records = [json.loads(line) for line in open(tmp_path / "sweep.jsonl")]
    assert [r["samples"] for r in records] == [5 * 16, 7 * 16]  # 5 steps, then 2 of the second epoch
    assert ranked[0]["epochs"] == 2
