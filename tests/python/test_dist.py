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


def test_a_failed_worker_raises_a_run_error_naming_the_worker_and_its_error(tmp_path, colo_executable):
    # The launcher's last line only names the process that failed; the reason
    # (here a data directory that does not exist) must be in the RunError too.
    spec = small_cluster(tmp_path)
    spec["data"]["path"] = str(tmp_path / "no-such-data")
    with pytest.raises(colo.RunError) as failure:
        colo.dist.launch(spec, out=tmp_path / "nodata")
    message = str(failure.value)
    assert "(worker 0" in message or "(worker 1" in message
    assert "no-such-data: data directory does not exist" in message


def test_the_run_error_takes_the_failed_ranks_error_from_its_log_or_from_rank_0s_output():
    rank1 = ["colo dist: 2 workers, strategy allreduce, rendezvous tcp://127.0.0.1:1",
             "colo: error: a collective failed (a peer died, or sent nothing for 30 s): Connection reset by peer",
             "colo dist: rank 1 (worker 1, pid 7) exited with status 1; stopping the other 1 processes",
             "--- end of out/rank1.log ---",
             "colo: error: out of memory"]
    assert colo.dist._failure(rank1) == ("colo dist: rank 1 (worker 1, pid 7) exited with status 1; stopping the "
                                         "other 1 processes -- colo: error: out of memory")
    rank0 = ["colo dist: 2 workers, strategy allreduce, rendezvous tcp://127.0.0.1:1",
             "colo: error: the training split has fewer samples than one global batch (64)",
             "colo dist: rank 0 (worker 0, pid 6) exited with status 1; stopping the other 1 processes"]
    assert colo.dist._failure(rank0).endswith("(worker 0, pid 6) exited with status 1; stopping the other 1 "
                                              "processes -- colo: error: the training split has fewer samples "
                                              "than one global batch (64)")
    assert colo.dist._failure(["colo: error: x.toml:3: cluster.workers: expected ..."]) == \
        "colo: error: x.toml:3: cluster.workers: expected ..."
