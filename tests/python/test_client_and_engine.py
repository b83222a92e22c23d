"""colo.Client against a real colod, and colo.train / colo.sweep running the C++ engine."""
import json
import os
import subprocess
import time

import pytest

import colo

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def colod(tmp_path, colo_executable):
    colod_path = os.path.join(os.path.dirname(colo_executable), "colod")
    if not os.path.exists(colod_path):
        pytest.fail(f"{colod_path} was not built (cpp-httplib missing?)")
    state = tmp_path / "state"
    env = dict(os.environ, COLO_SIMULATED_GPUS="1")
    daemon = subprocess.Popen([colod_path, "--state-dir", str(state), "--poll", "0.1"], env=env,
                              stdout=subprocess.DEVNULL, stderr=open(tmp_path / "colod.log", "w"))
    deadline = time.time() + 30
    while not (state / "colod.json").exists() and time.time() < deadline:
        time.sleep(0.1)
    assert (state / "colod.json").exists(), (tmp_path / "colod.log").read_text()
    yield str(state)
    daemon.terminate()
    daemon.wait(timeout=10)


def wait_final(client, job_id, timeout_s=30):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        job = client.show(job_id)
        if job["state"] in ("COMPLETED", "FAILED", "CANCELLED"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def test_client_submits_lists_shows_logs_and_cancels(colod, tmp_path):
    client = colo.Client(state_dir=colod)
    [first] = client.submit(["sh", "-c", "echo hello from python"], name="greet", mem="1GiB", sm_share=0.2)
    assert wait_final(client, first)["state"] == "COMPLETED"
    assert client.logs(first) == "hello from python\n"
    [second] = client.submit("sleep 30", name="long", mem="1GiB")
    names = {job["id"]: job["spec"]["name"] for job in client.queue()}
    assert names[first] == "greet" and names[second] == "long"
    client.cancel(second)
    assert wait_final(client, second)["state"] == "CANCELLED"


def test_client_submission_with_a_model_is_stored_with_an_estimate(colod, tmp_path):
    (tmp_path / "netdef.py").write_text("import torch.nn as nn\n\ndef build():\n    return nn.Linear(32, 4)\n")
    client = colo.Client(state_dir=colod)
    # It starts on the empty GPU before its estimate comes, and runs until colod's log shows it.
    log = tmp_path / "colod.log"
    [job] = client.submit(f"for i in $(seq 1200); do grep -q 'needs about' {log} && break; sleep 0.1; done",
                          workdir=str(tmp_path),
                          model={"builder": "netdef:build", "input": [32], "batch_size": 64, "optimizer": "sgd"})
    # colod's scheduler estimates the model once the job is queued, and keeps it with the job.
    assert wait_final(client, job)["state"] == "COMPLETED"
    assert client.show(job)["spec"]["mem_bytes"] > 0


def test_client_reports_colods_refusal(colod):
    client = colo.Client(state_dir=colod)
    with pytest.raises(colo.ColoError, match="sm_share"):
        client.submit("true", sm_share=3.0)
    with pytest.raises(colo.ColoError, match="404"):
        client.show(999)


def test_client_without_a_daemon_says_so(tmp_path):
    with pytest.raises(colo.ColoError, match="no running colod"):
        colo.Client(state_dir=str(tmp_path))


def test_train_returns_one_record_per_epoch(tmp_path, colo_executable):
    spec = tmp_path / "spec.toml"
    spec.write_text(open(os.path.join(ROOT, "examples", "quickstart.toml")).read()
                    .replace('name = "fashion-mnist"', 'name = "fashion-mnist"\ntrain_limit = 2048\ntest_limit = 512'))
    records = colo.train(str(spec), out=str(tmp_path / "run"), device="cpu")
    assert [r["epoch"] for r in records] == [1, 2]
    assert all(0.0 <= r["test_accuracy"] <= 1.0 for r in records)


def test_sweep_returns_ranked_models(tmp_path, colo_executable):
    spec = tmp_path / "sweep.toml"
    spec.write_text(open(os.path.join(ROOT, "examples", "sweep_quickstart.toml")).read()
                    .replace('name = "fashion-mnist"', 'name = "fashion-mnist"\ntrain_limit = 2048\ntest_limit = 512'))
    ranked = colo.sweep(str(spec), out=str(tmp_path / "sweep"), device="cpu")
    assert len(ranked) == 8
    accuracies = [m["best_test_accuracy"] for m in ranked]
    assert accuracies == sorted(accuracies, reverse=True)
    assert {"lr", "momentum", "widths"} <= set(ranked[0]["values"])


def test_train_failure_is_a_run_error(tmp_path, colo_executable):
    with pytest.raises(FileNotFoundError):
        colo.train(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("epochs = -1\n")
    with pytest.raises(colo.RunError, match="exited with 2"):
        colo.train(str(bad))


def test_client_refuses_bad_values_before_sending(tmp_path):
    # Nothing listens on this URL: each refusal must come from the client itself, as ValueError.
    client = colo.Client(url="http://127.0.0.1:9", token="t")
    for bad in (6e999, float("nan"), -1, "inf", "1e400GiB", "99999999999999GiB", True, [1]):
        with pytest.raises(ValueError, match="mem"):
            client.submit("true", mem=bad)  # was AttributeError, OverflowError or colod's 'must be >= 0'
    with pytest.raises(ValueError, match="sm_share"):
        client.submit("true", sm_share=float("nan"))  # was colod's 'the body is not JSON'
    with pytest.raises(ValueError, match="priority"):
        client.submit("true", priority=1e20)  # was stored as priority -2147483648
    with pytest.raises(ValueError, match="env"):
        client.submit("true", env={"A": 1})
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="gpus"):
            client.submit("true", gpus=bad)


def test_client_submits_gpus_bytes_as_numbers_and_lists_several_states(colod):
    client = colo.Client(state_dir=colod)
    with pytest.raises(colo.ColoError, match="asks for 2 GPUs"):  # colod (one simulated GPU) sees gpus = 2
        client.submit("true", gpus=2, mem="1GiB")
    [job] = client.submit("sleep 30", mem=6e8, gpus=1)
    assert client.show(job)["spec"]["mem_bytes"] == 600000000 and client.show(job)["spec"]["gpus"] == 1
    assert job in [j["id"] for j in client.queue(["PENDING", "RUNNING"])]
    assert job in [j["id"] for j in client.queue("PENDING,RUNNING")]
    client.cancel(job)
    assert wait_final(client, job)["state"] == "CANCELLED"
