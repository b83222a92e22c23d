"""colo.report_progress writes what colo's runner reads (core/progress_file.h)."""
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import colo
import colo.data
import colo.progress


def test_report_progress_writes_the_file_colo_names(tmp_path, monkeypatch):
    path = tmp_path / "job.progress"
    monkeypatch.setenv("COLO_PROGRESS_FILE", str(path))
    monkeypatch.setattr(colo.progress, "_state", {"start": None, "last_write": 0.0})
    monkeypatch.setattr(colo.data, "_had_loader", [False])  # a process without shared loaders: no data wait
    before = time.time()
    colo.report_progress(samples=256, train_s=0.5)
    written = json.loads(path.read_text())
    assert before <= written.pop("at") <= time.time()  # colo compare times training by it
    assert written == {"samples": 256, "train_s": 0.5}
    colo.report_progress(samples=512, train_s=1.0)  # within the interval: not written yet
    assert json.loads(path.read_text())["samples"] == 256
    colo.report_progress(samples=1024, train_s=2.0, interval_s=0)
    written = json.loads(path.read_text())
    assert (written["samples"], written["train_s"]) == (1024, 2.0)


def test_a_host_timed_train_s_grows_by_the_wait_for_the_queued_steps(tmp_path, monkeypatch):
    # A CUDA-graphed loop queues steps far ahead of the device: its host clock
    # says little time passed, the device is still training what it counts.
    path = tmp_path / "job.progress"
    monkeypatch.setenv("COLO_PROGRESS_FILE", str(path))
    monkeypatch.setattr(colo.progress, "_state", {"start": None, "last_write": 0.0, "pending": None})
    monkeypatch.setattr(colo.progress, "_wait_for_device", lambda: 0.3)
    colo.report_progress(samples=256, train_s=0.01)
    assert json.loads(path.read_text())["train_s"] == 0.01 + 0.3
    colo.report_progress(samples=512, train_s=0.02)  # held back by the interval: no wait, as given
    colo.progress.flush()
    assert json.loads(path.read_text())["train_s"] == 0.02 + 0.3, "flush waits too, and counts it"


def test_the_first_report_waits_for_its_start_together_group_and_the_wait_is_not_training(tmp_path, monkeypatch):
    # colo compare's timeslice and mps levels: every process trains from the
    # moment the last has started, not alone while the others start up.
    path, group = tmp_path / "job.progress", tmp_path / "group"
    monkeypatch.setenv("COLO_PROGRESS_FILE", str(path))
    monkeypatch.setenv("COLO_START_TOGETHER", str(group))
    monkeypatch.setenv("COLO_START_TOGETHER_COUNT", "2")
    monkeypatch.setattr(colo.progress, "_state", {"start": None, "last_write": 0.0, "pending": None})
    monkeypatch.setattr(colo.progress, "_wait_for_device", lambda: 0.0)

    def another_process_arrives():
        time.sleep(0.4)
        group.mkdir(exist_ok=True)
        (group / "another").touch()
    other = threading.Thread(target=another_process_arrives)
    other.start()
    before = time.time()
    colo.report_progress(samples=128)
    other.join()
    first = json.loads(path.read_text())
    assert first["at"] >= before + 0.35, "written once the group has gathered"
    assert first["train_s"] < 0.1, "the wait is not training"
    together = colo.progress._state["together_s"]
    assert together >= 0.35
    # A caller's own clock ran through the wait: it is taken out after the first call.
    colo.report_progress(samples=256, train_s=1.5, interval_s=0)
    assert json.loads(path.read_text())["train_s"] == 1.5 - together

    # A group that never gathers holds its first call no longer than its timeout.
    monkeypatch.setattr(colo.progress, "_state", {"start": None, "last_write": 0.0, "pending": None})
    monkeypatch.setenv("COLO_START_TOGETHER_COUNT", "5")
    monkeypatch.setenv("COLO_START_TOGETHER_TIMEOUT_S", "0.2")
    begin = time.monotonic()
    colo.report_progress(samples=64)
    assert 0.2 <= time.monotonic() - begin < 5


def test_a_malformed_start_together_timeout_keeps_the_default_wait(tmp_path, monkeypatch):
    # As colo's C++ side reads it: a bad timeout is not "no wait".
    group = tmp_path / "group"
    monkeypatch.setenv("COLO_START_TOGETHER", str(group))
    monkeypatch.setenv("COLO_START_TOGETHER_COUNT", "2")
    for bad in ("soon", "-1", "nan"):
        monkeypatch.setenv("COLO_START_TOGETHER_TIMEOUT_S", bad)
        for f in group.glob("*"):
            f.unlink()

        def another_process_arrives():
            time.sleep(0.3)
            (group / "another").touch()
        other = threading.Thread(target=another_process_arrives)
        other.start()
        waited = colo.progress._start_together()
        other.join()
        assert waited >= 0.25, f"{bad!r}: waited for the group, not skipped"


def test_the_reader_may_ask_for_writes_more_often(tmp_path, monkeypatch):
    path = tmp_path / "job.progress"
    monkeypatch.setenv("COLO_PROGRESS_FILE", str(path))
    monkeypatch.setenv("COLO_PROGRESS_INTERVAL_S", "0.05")
    monkeypatch.setattr(colo.progress, "_state", {"start": None, "last_write": 0.0})
    colo.report_progress(samples=1)
    colo.report_progress(samples=2)
    assert json.loads(path.read_text())["samples"] == 1  # the default 1 s would hold it back too
    time.sleep(0.06)
    colo.report_progress(samples=3)
    assert json.loads(path.read_text())["samples"] == 3
    monkeypatch.setenv("COLO_PROGRESS_INTERVAL_S", "not a number")
    time.sleep(0.06)
    colo.report_progress(samples=4)
    assert json.loads(path.read_text())["samples"] == 3, "a bad value leaves the 1 s default"


def test_the_last_call_reaches_the_file_though_the_interval_held_it_back(tmp_path):
    path = tmp_path / "job.progress"
    script = textwrap.dedent("""\
        import colo
        colo.report_progress(samples=256, train_s=0.5, interval_s=60)
        colo.report_progress(samples=512, train_s=1.0, interval_s=60)  # the job's last call, held back
        """)
    env = {k: v for k, v in os.environ.items() if k != "COLO_PROGRESS_INTERVAL_S"}
    env["COLO_PROGRESS_FILE"] = str(path)
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    written = json.loads(path.read_text())
    assert (written["samples"], written["train_s"]) == (512, 1.0), "written at exit"


def test_flush_writes_a_held_back_call_once(tmp_path, monkeypatch):
    path = tmp_path / "job.progress"
    monkeypatch.setenv("COLO_PROGRESS_FILE", str(path))
    monkeypatch.setattr(colo.progress, "_state", {"start": None, "last_write": 0.0, "pending": None})
    colo.report_progress(samples=1, train_s=0.1)
    colo.progress.flush()
    assert json.loads(path.read_text())["samples"] == 1, "nothing held back: the same figures"
    colo.report_progress(samples=2, train_s=0.2)
    assert json.loads(path.read_text())["samples"] == 1
    colo.progress.flush()
    written = json.loads(path.read_text())
    assert (written["samples"], written["train_s"]) == (2, 0.2)
    path.unlink()
    colo.progress.flush()
    assert not path.exists(), "once written, nothing is pending"


def test_report_progress_outside_colo_does_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("COLO_PROGRESS_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    colo.report_progress(samples=10)
    assert list(tmp_path.iterdir()) == []
