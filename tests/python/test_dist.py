"""colo.dist.launch runs real multi-process `colo dist` jobs and returns their records."""
import os

import pytest

import colo
import colo.dist


def small_cluster(tmp_path, strategy="allreduce", **cluster):
    return {
        "seed": 4, "device": "cpu", "epochs": 1, "max_steps": 6, "batch_size": 32,
        "model": {"name": "mlp", "widths": [32]},
        "data": {"name": "fashion-mnist", "prefetch": 0, "train_limit": 1024, "test_limit": 256},
        "optimizer": {"name": "sgd", "lr": 0.1, "momentum": 0.9},
        "cluster": {"workers": 2, "strategy": strategy, "backend": "gloo", **cluster},
    }


def test_launch_returns_every_ranks_steps_and_the_result(tmp_path, colo_executable):
    run = colo.dist.launch(small_cluster(tmp_path), out=tmp_path / "ar")
    assert run["result"]["strategy"] == "allreduce"
    assert run["result"]["workers"] == 2
    assert [(s["rank"], s["step"]) for s in run["steps"]] == [(r, s) for r in (0, 1) for s in range(1, 7)]
    assert all(s["strategy"] == "allreduce" and s["loss"] > 0 for s in run["steps"])
    assert run["evaluations"] and 0 <= run["evaluations"][-1]["test_accuracy"] <= 1
    assert os.path.exists(tmp_path / "ar" / "cluster.toml")


def test_launch_runs_the_parameter_server_from_a_dict(tmp_path, colo_executable):
    spec = small_cluster(tmp_path, strategy="param_server", servers=1)
    spec["param_server"] = {"mode": "sync"}
    run = colo.dist.launch(spec, out=tmp_path / "ps")
    assert run["result"]["strategy"] == "param_server" and run["result"]["mode"] == "sync"
    assert {s["strategy"] for s in run["steps"]} == {"ps-sync"}
    assert all(s["bytes_sent"] > 0 for s in run["steps"])


def test_launch_resumes_from_the_last_checkpoint_and_trains_on(tmp_path, colo_executable):
    spec = small_cluster(tmp_path, checkpoint_steps=2)
    spec["max_steps"] = 4
    first = colo.dist.launch(spec, out=tmp_path / "run")
    assert first["result"]["steps"] == 4 and first["result"]["resumed"] is False
    spec["max_steps"] = 6
    more = colo.dist.launch(spec, out=tmp_path / "run", resume=True)
    assert more["result"]["steps"] == 6 and more["result"]["resumed"] is True
    assert [(s["rank"], s["step"]) for s in more["steps"]] == [(r, s) for r in (0, 1) for s in range(1, 7)]
    # The first four steps' records are the first run's, kept as they were.
    assert more["steps"][:4] == first["steps"][:4]
    with pytest.raises(colo.RunError, match="no checkpoint|none was committed"):
        colo.dist.launch(small_cluster(tmp_path), out=tmp_path / "fresh", resume=True)
    fresh = colo.dist.launch(small_cluster(tmp_path, checkpoint_steps=3), out=tmp_path / "fresh", resume="if-any")
    assert fresh["result"]["resumed"] is False and fresh["result"]["steps"] == 6
    assert colo.dist.launch(small_cluster(tmp_path, checkpoint_steps=3), out=tmp_path / "fresh",
                            resume="if-any")["result"]["resumed"] is True
    with pytest.raises(ValueError, match="if-any"):
        colo.dist.launch(small_cluster(tmp_path), out=tmp_path / "bad", resume="auto")


def test_launch_reports_bad_input_clearly(tmp_path, colo_executable):
    with pytest.raises(FileNotFoundError, match="no cluster file"):
        colo.dist.launch(str(tmp_path / "missing.toml"))
    spec = small_cluster(tmp_path)
    spec["cluster"]["strategy"] = "gossip"
    with pytest.raises(colo.RunError, match="cluster.strategy"):
        colo.dist.launch(spec, out=tmp_path / "bad")
    with pytest.raises(TypeError, match="cannot write"):
        colo.dist.launch({"cluster": {"workers": object()}}, out=tmp_path / "bad2")


def test_cluster_toml_writes_tables_and_arrays_of_tables():
    text = colo.dist.cluster_toml({"seed": 1, "device": "cpu", "cluster": {"workers": 2, "strategy": "switch"},
                                   "simulate": {"max_time_s": 2.5, "worker": [{"speed": 1.0}, {"speed": 0.5}]}})
    assert text.splitlines() == ['seed = 1', 'device = "cpu"', '[cluster]', 'workers = 2', 'strategy = "switch"',
                                 '[simulate]', 'max_time_s = 2.5', '[[simulate.worker]]', 'speed = 1.0',
                                 '[[simulate.worker]]', 'speed = 0.5']
