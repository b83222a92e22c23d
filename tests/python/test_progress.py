"""colo.report_progress writes what colo's runner reads (core/progress_file.h)."""
import json

import colo
import colo.progress


def test_report_progress_writes_the_file_colo_names(tmp_path, monkeypatch):
    path = tmp_path / "job.progress"
    monkeypatch.setenv("COLO_PROGRESS_FILE", str(path))
    monkeypatch.setattr(colo.progress, "_state", {"start": None, "last_write": 0.0})
    colo.report_progress(samples=256, train_s=0.5)
    assert json.loads(path.read_text()) == {"samples": 256, "train_s": 0.5}
    colo.report_progress(samples=512, train_s=1.0)  # within the interval: not written yet
    assert json.loads(path.read_text())["samples"] == 256
    colo.report_progress(samples=1024, train_s=2.0, interval_s=0)
    assert json.loads(path.read_text()) == {"samples": 1024, "train_s": 2.0}


def test_report_progress_outside_colo_does_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("COLO_PROGRESS_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    colo.report_progress(samples=10)
    assert list(tmp_path.iterdir()) == []
