"""colo.data.SharedLoader against a real `colo loader serve` process: batches
are normalised images with valid labels; kill -9 of a consumer leaves the
others going; kill -9 of the producer ends its consumers with ProducerLost,
and no shared-memory segment is left behind."""
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import colo.data
from loader_support import serve, small_image_data


@pytest.fixture
def loader(tmp_path, colo_executable):
    """A running producer over 300 synthetic 32 px JPEGs; yields its DATA.toml."""
    data = small_image_data(colo_executable, tmp_path)
    producer = serve(colo_executable, data, f"ipc://{tmp_path}/loader.sock")
    status = [colo_executable, "loader", "status", f"ipc://{tmp_path}/loader.sock", "--timeout", "0.5"]
    yield data, producer, status
    if producer.poll() is None:
        producer.send_signal(signal.SIGINT)
        producer.wait(10)


def _consumer(data, batches, pause, device="cpu"):
    code = textwrap.dedent(f"""\
        import sys, time, colo.data
        loader = colo.data.SharedLoader({str(data)!r}, 8, timeout=2, device={device!r})
        assert loader.reads_device_ring == ({device!r} != "cpu")
        print("ready", flush=True)
        try:
            for b in range({batches}):
                loader.next_batch()
                time.sleep({pause})
        except colo.data.ProducerLost as e:
            print("lost:", e, flush=True)
            sys.exit(3)
        print("done", loader.stats()["batches"], flush=True)
        """)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))


def test_normalising_is_pixels_over_255_less_mean_over_std_and_leaves_the_pixels():
    mean, std = [0.4, 0.5, 0.6], [0.2, 0.25, 0.3]
    normalise = colo.data._Normaliser(mean, std, "cpu", False, True)
    pixels = torch.randint(0, 256, (2, 3, 5, 5), dtype=torch.uint8)
    kept = pixels.clone()
    inputs, labels = normalise(pixels, torch.arange(2))
    want = (pixels.double() / 255 - torch.tensor(mean).view(1, 3, 1, 1)) / torch.tensor(std).view(1, 3, 1, 1)
    assert inputs.dtype == torch.float32
    assert torch.allclose(inputs.double(), want, atol=1e-5)
    assert torch.equal(pixels, kept) and labels.tolist() == [0, 1]


def test_cpu_batches_normalised_from_the_ring_are_the_copied_pixels_normalised(loader):
    data, _, _ = loader
    straight = colo.data.SharedLoader(str(data), 20)  # on the CPU: normalised in place from the ring
    copied = colo.data._core().SharedLoaderClient(straight.address, 20)
    straight.start_reading()
    copied.start_reading()
    for step in range(8):
        inputs, labels = straight.next_batch()
        pixels, want_labels = torch.empty(20, 3, 24, 24, dtype=torch.uint8), torch.empty(20, dtype=torch.int64)
        copied.next_batch(pixels, want_labels)
        assert torch.equal(labels, want_labels), step
        want = pixels.float() * straight.normalise.scale + straight.normalise.shift
        assert torch.allclose(inputs, want, atol=1e-6), step
    straight.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_waits_sleep_once_asked_before_and_after_the_device_is_in_use():
    code = textwrap.dedent("""\
        import torch, colo.data
        before = colo.data.sleep_while_waiting("cuda")
        torch.ones(1, device="cuda").sum().item()
        print(before, colo.data.sleep_while_waiting("cuda:0"), colo.data.sleep_while_waiting("cpu"))
        """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["True", "True", "False"]


def test_batches_are_normalised_images_with_labels(loader):
    data, _, _ = loader
    shared = colo.data.SharedLoader(str(data), 20)
    assert len(shared) == 300 // 20
    inputs, labels = shared.next_batch()
    assert inputs.shape == (20, 3, 24, 24) and inputs.dtype == torch.float32
    assert labels.dtype == torch.int64 and 0 <= labels.min() and labels.max() < shared.classes == 10
    assert -3 < inputs.mean() < 3 and inputs.std() > 0.1  # normalised pixels, not raw 0..255
    local = colo.data.LocalImageLoader(str(data), 20)
    local_inputs, _ = next(iter(local))
    assert local_inputs.shape == inputs.shape and abs(local_inputs.mean() - inputs.mean()) < 0.5


def test_a_folder_of_real_world_jpegs_decodes_to_the_pixels_torchvision_reads(tmp_path, capfd):
    """CMYK and grey-scale JPEGs, and JPEGs in a class's subfolders, as
    torchvision's ImageFolder (Pillow) reads them; a PNG is left out with a
    line saying so."""
    Image = pytest.importorskip("PIL.Image")
    torchvision = pytest.importorskip("torchvision")
    numpy = pytest.importorskip("numpy")
    rng = torch.Generator().manual_seed(0)
    def picture():
        return (torch.rand(16, 16, 3, generator=rng) * 255).to(torch.uint8).numpy()
    (tmp_path / "images/a").mkdir(parents=True)
    (tmp_path / "images/b/sub").mkdir(parents=True)
    Image.fromarray(picture()).save(tmp_path / "images/a/rgb.jpg", quality=95)
    Image.fromarray(picture()).convert("CMYK").save(tmp_path / "images/b/cmyk.jpg", quality=95)
    Image.fromarray(picture()[:, :, 0]).save(tmp_path / "images/b/sub/grey.jpeg", quality=95)
    Image.fromarray(picture()).save(tmp_path / "images/b/sub/left_out.png")
    data = tmp_path / "data.toml"
    data.write_text('root = "images"\nsize = 16\ncrop = false\nflip = false\nthreads = 1\n'
                    'mean = [0.0, 0.0, 0.0]\nstd = [1.0, 1.0, 1.0]\n')
    local = colo.data.LocalImageLoader(str(data), 3)
    assert "1 image(s) that are not JPEG left out" in capfd.readouterr().err
    inputs, labels = next(iter(local))
    pillow = torchvision.datasets.ImageFolder(str(tmp_path / "images"))
    want = {path: (torch.from_numpy(numpy.array(pillow.loader(path))).permute(2, 0, 1), label)
            for path, label in pillow.samples if not path.endswith(".png")}
    assert len(local.dataset) == len(want) == 3 and local.dataset.classes == pillow.classes
    matched = set()
    for x, label in zip(inputs, labels.tolist()):
        pixels = (x * 255).round().to(torch.int16)
        path = min(want, key=lambda p: (pixels - want[p][0]).abs().max().item())
        assert (pixels - want[path][0]).abs().max().item() <= 1, path
        assert label == want[path][1]
        matched.add(path)
    assert len(matched) == 3


def test_a_loop_written_for_a_dataloader_reads_the_colo_loaders_unchanged(loader, tmp_path):
    data, _, _ = loader
    folders = sorted(os.listdir(tmp_path / "images"))
    habits = dict(shuffle=True, drop_last=True, num_workers=4, persistent_workers=True, prefetch_factor=2)
    for made in (lambda **o: colo.data.SharedLoader(str(data), 32, **o),
                 lambda **o: colo.data.LocalImageLoader(str(data), 32, **o)):
        batches = made(**habits)
        # What such a loop reads: len(loader.dataset) for its averages, the class names for its reports.
        assert len(batches.dataset) == 300 and len(batches) == 300 // 32
        assert batches.dataset.classes == folders and len(folders) == batches.classes
        seen = sum(labels.numel() for _, labels in batches)
        assert seen == len(batches) * 32 <= len(batches.dataset)
        with pytest.raises(ValueError, match="always come shuffled"):
            made(shuffle=False)
        with pytest.raises(ValueError, match="only full batches"):
            made(drop_last=False)
        with pytest.raises(TypeError, match="collate_fn"):
            made(collate_fn=None)


def test_a_script_that_ends_with_a_local_loaders_epoch_open_exits_cleanly(loader):
    # Its decode thread, left to the interpreter's end, aborted the process (SIGABRT).
    data, _, _ = loader
    code = textwrap.dedent(f"""\
        import colo.data
        batches = iter(colo.data.LocalImageLoader({str(data)!r}, 20, prefetch=1))
        next(batches)
        print("read", flush=True)
        """)
    for _ in range(3):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert (run.returncode, run.stdout.strip()) == (0, "read"), run.stderr[-2000:]


def test_loaders_that_start_reading_together_see_the_same_stream(loader):
    data, _, _ = loader
    a, b = colo.data.SharedLoader(str(data), 20), colo.data.SharedLoader(str(data), 20)
    a.start_reading()
    b.start_reading()
    for step in range(6):  # 120 samples: the 4-slot ring of 16 is reused many times over
        assert torch.equal(a.next_batch()[1], b.next_batch()[1]), step
    a.close()
    b.close()


def test_killing_a_consumer_leaves_the_others_going(loader):
    data, _, status = loader
    victim, survivor = _consumer(data, 1000, 0.01), _consumer(data, 150, 0.005)
    assert victim.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    victim.send_signal(signal.SIGKILL)
    out, err = survivor.communicate(timeout=60)
    assert survivor.returncode == 0, err
    assert out.strip().endswith("done 150")
    # The victim is dropped once its heartbeat timeout (1 s) has passed since
    # its last message, which may be after the survivor is done.
    for _ in range(50):
        stats = subprocess.run(status, capture_output=True, text=True, check=True).stdout
        if '"consumers_dropped":1' in stats:
            break
        time.sleep(0.1)
    assert '"consumers_dropped":1' in stats


def test_killing_the_producer_ends_consumers_cleanly_with_nothing_leaked(loader):
    data, producer, _ = loader
    shm_before = set(os.listdir("/dev/shm"))
    consumer = _consumer(data, 100000, 0.002)
    assert consumer.stdout.readline().strip() == "ready"
    time.sleep(0.3)
    producer.send_signal(signal.SIGKILL)
    producer.wait(10)
    started = time.time()
    out, err = consumer.communicate(timeout=30)
    assert consumer.returncode == 3, (out, err)
    assert "stopped answering" in out and "loader.sock" in out
    assert time.time() - started < 10
    # The ring was a memfd: gone with its last user, nothing new left in /dev/shm (other
    # processes on the machine may remove their own entries meanwhile).
    assert not set(os.listdir("/dev/shm")) - shm_before


def _expect_loading_locally_once_the_producer_is_killed(data, producer, device):
    """A consumer made with on_producer_lost="load_locally" reads a batch
    from `producer`, which is then killed, and reads on: 60 batches (more than
    an epoch of 300 images) like the shared one, on `device`, and one line
    on stderr."""
    code = textwrap.dedent(f"""\
        import json, sys, colo.data
        loader = colo.data.SharedLoader({str(data)!r}, 8, timeout=1, device={device!r}, on_producer_lost="load_locally")
        assert loader.reads_device_ring == ({device!r} != "cpu")
        shared, _ = loader.next_batch()
        print("ready", flush=True)
        sys.stdin.readline()
        for b in range(60):
            x, y = loader.next_batch()
            assert x.shape == shared.shape and x.dtype == shared.dtype and x.device == shared.device, (x, shared)
            assert 0 <= int(y.min()) and int(y.max()) < loader.classes, y
        print(json.dumps({{"loads_locally": loader.loads_locally, **loader.stats()}}), flush=True)
        loader.close()
        print(json.dumps(loader.stats()), flush=True)
        """)
    consumer = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    assert consumer.stdout.readline().strip() == "ready", consumer.stderr.read()
    producer.send_signal(signal.SIGKILL)
    producer.wait(10)
    out, err = consumer.communicate("go\n", timeout=120)
    assert consumer.returncode == 0, err
    reading, closed = (json.loads(line) for line in out.strip().splitlines())
    assert reading["loads_locally"] is True and reading["batches"] == 61 and reading["samples"] == 61 * 8
    assert "stopped answering" in reading["producer_lost"]
    assert closed["batches"] == 61  # stats() after close() keep both parts
    assert err.count("now loads its own batches from") == 1 and str(data) in err


def test_a_consumer_told_to_load_locally_trains_on_from_the_data_file_once_the_producer_is_killed(loader):
    data, producer, _ = loader
    _expect_loading_locally_once_the_producer_is_killed(data, producer, "cpu")


def test_loading_locally_needs_the_data_file_and_a_known_choice():
    with pytest.raises(ValueError, match="needs the loader's data file"):
        colo.data.SharedLoader("ipc:///nonexistent/colo.sock", 8, on_producer_lost="load_locally")
    with pytest.raises(ValueError, match="on_producer_lost='retry'"):
        colo.data.SharedLoader("ipc:///nonexistent/colo.sock", 8, on_producer_lost="retry")


def test_colo_monitor_samples_the_producer_and_each_consumers_wait(loader, tmp_path, colo_executable):
    data, _, status = loader
    address = status[3]
    summary_path, samples_path = tmp_path / "monitor.json", tmp_path / "monitor.csv"
    run = subprocess.run([colo_executable, "monitor", "--interval", "0.2", "--loader", address,
                          "--out", str(samples_path), "--summary-json", str(summary_path), "--",
                          colo_executable, "loader", "consume", address, "--batch-size", "8", "--batches", "60",
                          "--step-ms", "20"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    summary = json.loads(summary_path.read_text())
    (producer,) = summary["loaders"]
    assert producer["address"] == address
    assert producer["answers"] >= 4 and producer["unanswered"] == 0
    assert producer["samples_per_s"] > 0 and producer["cpu_core_s_per_sample"] > 0
    assert producer["consumers_max"] == 1
    assert 0 <= producer["buffer_depth_min"] <= producer["buffer_depth_max"] <= 4
    answers = [json.loads(line) for line in (tmp_path / "monitor.loaders.jsonl").read_text().splitlines()]
    assert len(answers) == producer["answers"]
    reports = [c for a in answers for c in a["consumer_stats"] if "samples" in c]
    assert reports, "the consumer's heartbeats carried its figures"
    (final,) = producer["consumer_stats"]
    assert final["left"] and final["samples"] == 480, "its bye carried its totals"
    assert final["samples_per_s"] > 0 and 0 <= final["wait_pct"] < 100
    assert f"loader {address}:" in run.stdout
    assert f"consumer {final['consumer']}: " in run.stdout and "waiting" in run.stdout
    assert "0 chunk(s) skipped" in run.stdout, "one consumer alone skips nothing"


def test_report_progress_carries_the_data_wait_of_the_jobs_shared_loaders(loader, tmp_path, monkeypatch):
    import colo
    data, _, _ = loader
    progress = tmp_path / "job.progress"
    monkeypatch.setenv("COLO_PROGRESS_FILE", str(progress))
    shared = colo.data.SharedLoader(str(data), 8)
    for _ in range(5):
        shared.next_batch()
    waited = shared.stats()["wait_s"]
    colo.report_progress(samples=40, train_s=max(waited, 0.01))
    written = json.loads(progress.read_text())
    assert written["data_wait_s"] >= waited > 0  # the first batch waits for the producer at least
    shared.close()
    assert colo.data.data_wait_s() >= waited, "a closed loader's wait still counts"


def test_the_scheduler_records_each_jobs_data_wait(loader, tmp_path, colo_executable):
    import sqlite3
    data, _, _ = loader
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(f"""\
        import time, colo, colo.data
        loader = colo.data.SharedLoader({str(data)!r}, 8)
        for step in range(30):
            loader.next_batch()
            time.sleep(0.02)
            colo.report_progress(samples=(step + 1) * 8, interval_s=0.05)
        """))
    (tmp_path / "jobs.toml").write_text(
        f'[[job]]\nname = "reader"\ncommand = "{sys.executable} {script}"\nmem = "1GiB"\n')
    run = subprocess.run([colo_executable, "run", str(tmp_path / "jobs.toml"), "--poll", "0.05"],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, COLO_SIMULATED_GPUS="1"))
    assert run.returncode == 0, run.stdout + run.stderr
    rows = sqlite3.connect(str(tmp_path / "jobs.toml.colo" / "jobs.db")).execute(
        "SELECT state, data_wait_pct FROM jobs").fetchall()
    assert len(rows) == 1 and rows[0][0] == "COMPLETED", rows
    assert rows[0][1] is not None and 0 < rows[0][1] < 100, rows
    queue = subprocess.run([colo_executable, "queue", "--store", str(tmp_path / "jobs.toml.colo" / "jobs.db")],
                           capture_output=True, text=True, timeout=30)
    assert "data_wait" in queue.stdout and f"{rows[0][1]:.1f}%" in queue.stdout, queue.stdout


def _live_producers(data_file):
    """Pids of `colo loader serve` processes serving `data_file`."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if b"serve" in cmdline and str(data_file).encode() in cmdline:
                pids.append(int(entry))
    return pids


def _image_data_file(tmp_path, colo_executable, images, chunk):
    """A DATA.toml over `images` synthetic 32 px JPEGs, served at 24 px; no producer started."""
    subprocess.run([colo_executable, "loader", "write-images", "--source", "synthetic", "--limit", str(images),
                    "--size", "32", "--out", str(tmp_path / "images")], check=True, capture_output=True)
    data = tmp_path / "data.toml"
    data.write_text(f'root = "images"\nsize = 24\nthreads = 1\nchunk = {chunk}\nbuffer = 4\n'
                    f'address = "ipc://{tmp_path}/sched-loader.sock"\n')
    return data


def test_the_scheduler_runs_one_producer_for_the_jobs_that_name_it_and_stops_it(tmp_path, colo_executable):
    import sqlite3
    data = _image_data_file(tmp_path, colo_executable, images=120, chunk=8)
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""\
        import os, time, colo.data
        loader = colo.data.SharedLoader(None, 8)
        for _ in range(20):
            loader.next_batch()
            time.sleep(0.02)
        print("read from", os.environ["COLO_LOADER"], loader.address)
        """))
    job = f'command = "{sys.executable} {script}"\nloader = "{data}"\nmem = "1GiB"\nsm_share = 0.2\n'
    (tmp_path / "jobs.toml").write_text(f'[[job]]\nname = "a"\n{job}\n[[job]]\nname = "b"\n{job}')
    shm_before = set(os.listdir("/dev/shm"))
    run = subprocess.run([colo_executable, "run", str(tmp_path / "jobs.toml"), "--poll", "0.05", "--policy", "magm"],
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, COLO_SIMULATED_GPUS="1"))
    assert run.returncode == 0, run.stdout + run.stderr
    rows = sqlite3.connect(str(tmp_path / "jobs.toml.colo" / "jobs.db")).execute("SELECT state FROM jobs").fetchall()
    assert rows == [("COMPLETED",), ("COMPLETED",)], run.stdout + run.stderr
    log = run.stdout + run.stderr
    assert log.count(" started (pid") == 1, log  # both jobs at once (SM share 0.2 each): one producer
    assert log.count("stopped: no job reads it") == 1, log
    assert _live_producers(data) == [], "the producer outlived its jobs"
    assert set(os.listdir("/dev/shm")) == shm_before


def test_two_schedulers_on_one_data_file_share_its_producer_and_the_first_to_end_does_not_stop_it(
        tmp_path, colo_executable):
    """Two `colo run` on one host name the same data file: the second's job
    reads from the first's producer instead of taking its address over, and
    the first, whose job ends first, leaves it running for the second's."""
    import sqlite3
    data = _image_data_file(tmp_path, colo_executable, images=120, chunk=8)
    script = tmp_path / "job.py"
    # The first job reads until the second has read a batch (however long
    # the second `colo run` takes to start on a busy machine), then ends;
    # the second reads on for 3 s after its first batch.
    second_reads = tmp_path / "second.reads"
    script.write_text(textwrap.dedent(f"""\
        import os, sys, time, colo.data
        loader = colo.data.SharedLoader(None, 8)
        loader.next_batch()
        if sys.argv[1] == "second":
            open({str(second_reads)!r}, "w").close()
            deadline = time.time() + 3
        else:
            deadline = time.time() + 120
        while time.time() < deadline and (sys.argv[1] == "second" or not os.path.exists({str(second_reads)!r})):
            loader.next_batch()
            time.sleep(0.02)
        """))
    runs = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        jobs = tmp_path / name / "jobs.toml"
        jobs.write_text(f'[[job]]\nname = "{name}"\ncommand = "{sys.executable} {script} {name}"\n'
                        f'loader = "{data}"\nmem = "1GiB"\nsm_share = 0.2\n')
        runs.append(subprocess.Popen([colo_executable, "run", str(jobs), "--poll", "0.05"], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLO_SIMULATED_GPUS="1")))
        if name == "first":  # its producer serving, and its job reading
            address = colo.data._core().loader_spec(str(data))["address"]
            for _ in range(200):
                done = subprocess.run([colo_executable, "loader", "status", address, "--timeout", "0.5"],
                                      capture_output=True, text=True)
                if done.returncode == 0 and json.loads(done.stdout)["consumers"] > 0:
                    break
                time.sleep(0.05)
    logs = [run.communicate(timeout=120)[0] for run in runs]
    for name, run, log in zip(("first", "second"), runs, logs):
        assert run.returncode == 0, log
        state = sqlite3.connect(str(tmp_path / name / "jobs.toml.colo" / "jobs.db")).execute(
            "SELECT state FROM jobs").fetchall()
        assert state == [("COMPLETED",)], (name, log)
    assert " started (pid" in logs[0] and "already serves" not in logs[0], logs[0]
    assert " started (pid" not in logs[1] and "a producer not started here already serves" in logs[1], logs[1]
    assert "still read from it; left running" in logs[0], logs[0]
    left = _live_producers(data)  # it would exit once idle for 60 s
    assert len(left) == 1, left
    os.kill(left[0], signal.SIGINT)
    for _ in range(100):
        if not _live_producers(data):
            break
        time.sleep(0.05)
    assert _live_producers(data) == []


@pytest.mark.parametrize("host", ["one_gpu", "no_gpu_two_cpu_slots"])
def test_jobs_the_scheduler_launches_together_read_their_first_batch_together(tmp_path, colo_executable, host):
    """A start group: the job that sets up fast waits at its first batch for
    the slow one, and both begin at the same samples; on a host without a
    GPU too, where `--cpu-slots 2` runs both at once."""
    data = _image_data_file(tmp_path, colo_executable, images=120, chunk=8)
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent("""\
        import json, sys, time, colo.data
        setup_s, out = float(sys.argv[1]), sys.argv[2]
        loader = colo.data.SharedLoader(None, 8)
        time.sleep(setup_s)  # building its model
        asked = time.time()
        _, labels = loader.next_batch()
        json.dump({"asked": asked, "got": time.time(), "labels": labels.tolist()}, open(out, "w"))
        """))
    jobs = "".join(f'[[job]]\nname = "{name}"\ncommand = "{sys.executable} {script} {setup} {tmp_path / name}.json"\n'
                   f'loader = "{data}"\nmem = "1GiB"\nsm_share = 0.2\n\n'
                   for name, setup in (("fast", 0), ("slow", 1.5)))
    (tmp_path / "jobs.toml").write_text(jobs)
    env = dict(os.environ, COLO_SIMULATED_GPUS="1" if host == "one_gpu" else "0")
    where = ["--cpu-slots", "2"] if host == "no_gpu_two_cpu_slots" else []
    run = subprocess.run([colo_executable, "run", str(tmp_path / "jobs.toml"), "--poll", "0.05", "--policy", "magm"]
                         + where, capture_output=True, text=True, timeout=120, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    fast, slow = (json.loads((tmp_path / f"{name}.json").read_text()) for name in ("fast", "slow"))
    assert fast["got"] >= slow["asked"] - 0.05, "the fast job's first batch waited for the slow one to ask"
    assert fast["got"] - fast["asked"] < 15, "well within the group's 20 s wait"
    assert fast["labels"] == slow["labels"], "both begin at the same samples"


def test_other_python_threads_run_while_start_reading_waits_for_its_start_group(tmp_path, colo_executable,
                                                                                monkeypatch):
    import threading
    data = small_image_data(colo_executable, tmp_path)
    ready = tmp_path / "loader.ready"
    producer = serve(colo_executable, data, f"ipc://{tmp_path}/loader.sock", "--ready-file", str(ready))
    try:
        monkeypatch.setenv("COLO_LOADER_START_GROUP", str(ready))
        loader = colo.data.SharedLoader(str(data), 16)
        ticks, done = [], threading.Event()

        def tick():
            while not done.is_set():
                ticks.append(time.time())
                time.sleep(0.01)

        ticker = threading.Thread(target=tick)
        ticker.start()
        # The scheduler's count comes a second later: until then the group waits.
        threading.Timer(1.0, lambda: (tmp_path / "loader.ready.group").write_text("1\n")).start()
        started = time.time()
        loader.start_reading()
        waited = time.time() - started
        done.set()
        ticker.join()
        assert 0.9 <= waited < 15, waited
        assert len([t for t in ticks if started <= t <= started + waited]) > 20, "the ticker ran during the wait"
        loader.close()
    finally:
        producer.send_signal(signal.SIGINT)
        producer.wait(10)


def test_a_job_naming_a_missing_loader_file_is_rejected(tmp_path, colo_executable):
    (tmp_path / "jobs.toml").write_text('command = "true"\nloader = "nowhere/data.toml"\n')
    run = subprocess.run([colo_executable, "run", str(tmp_path / "jobs.toml")], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, COLO_SIMULATED_GPUS="1"))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "loader" in run.stderr and "nowhere/data.toml" in run.stderr


def test_a_colo_train_job_on_a_shared_data_file_gets_its_producer_from_the_scheduler(tmp_path, colo_executable):
    import sqlite3
    data = _image_data_file(tmp_path, colo_executable, images=64, chunk=16)
    spec = tmp_path / "spec.toml"
    spec.write_text(f'device = "cpu"\nepochs = 2\nbatch_size = 16\ncheckpoint_every = 0\n'
                    f'[model]\nname = "mlp"\nwidths = [16]\n[data]\nname = "shared"\nloader = "{data}"\n')
    (tmp_path / "jobs.toml").write_text(
        f'command = "{colo_executable} train {spec} --out {tmp_path / "out"}"\nmem = "1GiB"\n')
    run = subprocess.run([colo_executable, "run", str(tmp_path / "jobs.toml"), "--poll", "0.05"],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, COLO_SIMULATED_GPUS="1"))
    log = run.stdout + run.stderr
    assert run.returncode == 0, log
    assert log.count(f"shared loader for {data} started") == 1, log
    rows = sqlite3.connect(str(tmp_path / "jobs.toml.colo" / "jobs.db")).execute(
        "SELECT state, data_wait_pct FROM jobs").fetchall()
    assert rows[0][0] == "COMPLETED" and rows[0][1] is not None, (rows, log)
    assert len((tmp_path / "out" / "metrics.jsonl").read_text().splitlines()) == 2
    assert _live_producers(data) == []


def _serve(colo_executable, data, extra):
    """Starts `colo loader serve` on `data` with `extra` lines appended; returns the process once it answers."""
    data.write_text(data.read_text().replace("buffer = 4", "buffer = 8") + extra)
    producer = subprocess.Popen([colo_executable, "loader", "serve", str(data), "--report", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    address = colo.data._core().loader_spec(str(data))["address"]
    for _ in range(100):
        if producer.poll() is not None or subprocess.run(
                [colo_executable, "loader", "status", address, "--timeout", "0.5"], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    return producer


def test_write_images_turns_fashion_mnist_into_a_jpeg_folder_and_names_a_bad_source(tmp_path, colo_executable):
    """The data.md command: Fashion-MNIST from its Debian path, 28 px grey
    images as RGB JPEGs in one folder per class, labels kept."""
    if not os.path.isdir("/usr/share/datasets/fashion-mnist"):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    done = subprocess.run([colo_executable, "loader", "write-images", "--source", "fashion-mnist", "--size", "32",
                           "--limit", "30", "--out", str(tmp_path / "fm")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    classes = sorted(os.listdir(tmp_path / "fm"))
    images = [name for c in classes for name in os.listdir(tmp_path / "fm" / c)]
    assert len(images) == 30 and len(classes) <= 10 and all(name.endswith(".jpg") for name in images)
    data = tmp_path / "data.toml"
    data.write_text('root = "fm"\nsize = 32\ncrop = false\nflip = false\nthreads = 1\n')
    local = colo.data.LocalImageLoader(str(data), 30)
    inputs, labels = next(iter(local))
    assert inputs.shape == (30, 3, 32, 32) and len(local.dataset) == 30
    assert torch.equal(inputs[:, 0], inputs[:, 1]), "grey images: the three channels are equal"
    for source, message in (("fashoin-mnist", "--source"), ("cifar10", "--path")):
        bad = subprocess.run([colo_executable, "loader", "write-images", "--source", source, "--out",
                              str(tmp_path / "bad")], capture_output=True, text=True)
        assert bad.returncode == 2 and message in bad.stderr and not (tmp_path / "bad").exists(), bad.stderr


def test_a_device_the_producer_cannot_use_is_named_in_one_line(tmp_path, colo_executable):
    data = _image_data_file(tmp_path, colo_executable, images=40, chunk=8)
    data.write_text(data.read_text() + 'device = "tpu"\n')
    bad = subprocess.run([colo_executable, "loader", "serve", str(data)], capture_output=True, text=True, timeout=30)
    assert bad.returncode != 0 and "device" in bad.stderr and "tpu" in bad.stderr
    if torch.cuda.is_available():
        return  # a CUDA build keeps the ring on the GPU: tests/gpu checks that
    data.write_text(data.read_text().replace('device = "tpu"', 'device = "cuda"'))
    no_cuda = subprocess.run([colo_executable, "loader", "serve", str(data)], capture_output=True, text=True,
                             timeout=30)
    assert no_cuda.returncode != 0 and "device" in no_cuda.stderr and "CUDA build" in no_cuda.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (bench/gpu/run.sh shared runs it)")
def test_gpu_consumers_copy_from_the_producers_device_ring_what_host_copies_would_give(tmp_path, colo_executable):
    data = _image_data_file(tmp_path, colo_executable, images=200, chunk=16)
    producer = _serve(colo_executable, data, 'device = "cuda"\n')
    try:
        assert producer.poll() is None, producer.stderr.read()
        # Batches of 8 span at most 3 chunks of 16: the 8-slot ring holds two
        # batches' chunks, so the reader hands chunks back a call late, once
        # copied. Batches of 24 span 4: it waits for each batch's copies.
        for batch in (8, 24):
            on_device = colo.data.SharedLoader(str(data), batch, device="cuda")
            through_host = colo.data.SharedLoader(str(data), batch, device="cuda", device_ring=False)
            assert on_device.reads_device_ring and not through_host.reads_device_ring
            on_device.start_reading()  # both from the same chunk on
            through_host.start_reading()
            for step in range(480 // batch):  # more than the 8-slot ring holds, so slots are reused
                a_inputs, a_labels = on_device.next_batch()
                b_inputs, b_labels = through_host.next_batch()
                assert a_inputs.is_cuda and a_labels.is_cuda
                assert torch.equal(a_labels, b_labels), (batch, step)
                assert torch.allclose(a_inputs, b_inputs), (batch, step)
            on_device.close()
            through_host.close()
    finally:
        producer.send_signal(signal.SIGINT)
        producer.wait(10)


def _gpu_processes():
    """PIDs that hold memory on a GPU (nvidia-smi)."""
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"], capture_output=True,
                         text=True, check=True).stdout
    return {int(line) for line in out.split() if line.strip().isdigit()}


@pytest.mark.skipif(not torch.cuda.is_available() or not shutil.which("nvidia-cuda-mps-control"),
                    reason="needs a GPU and MPS (bench/gpu/run.sh shared runs it)")
def test_under_mps_a_jobs_gpu_fault_ends_the_idle_producer_so_that_the_gpu_takes_new_processes(
        tmp_path, colo_executable):
    # A fatal fault reaches every MPS client on the GPU, and MPS takes no new
    # client there until all of them have exited: a producer left idle
    # (its reader dead of the fault) held the GPU so until killed.
    mps = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "mps-pipe"),
           "CUDA_MPS_LOG_DIRECTORY": str(tmp_path / "mps-log")}
    os.makedirs(mps["CUDA_MPS_PIPE_DIRECTORY"])
    os.makedirs(mps["CUDA_MPS_LOG_DIRECTORY"])
    subprocess.run(["nvidia-cuda-mps-control", "-d"], env=mps, check=True)
    producer = None
    try:
        data = small_image_data(colo_executable, tmp_path)
        data.write_text(data.read_text().replace("buffer = 4", "buffer = 8") + 'device = "cuda"\n')
        producer = subprocess.Popen([colo_executable, "loader", "serve", str(data), "--report", "0"], env=mps,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        reader = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""\
            import colo.data
            loader = colo.data.SharedLoader({str(data)!r}, 8, device="cuda", timeout=30)
            assert loader.reads_device_ring
            loader.next_batch()
            print("read", flush=True)""")], env=mps, capture_output=True, text=True, timeout=120)
        assert reader.returncode == 0 and "read" in reader.stdout, reader.stderr
        fault = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "illegal_address_job.py")],
                               env=mps, capture_output=True, text=True, timeout=120)
        assert "synchronize 700" in fault.stdout, (fault.stdout, fault.stderr)  # CUDA_ERROR_ILLEGAL_ADDRESS
        _, err = producer.communicate(timeout=30)
        assert producer.returncode not in (0, None)
        assert "fatal error (an illegal memory access was encountered)" in err, err
        after = subprocess.run([sys.executable, "-c", "import torch; print(torch.ones(2, device='cuda').sum().item())"],
                               env=mps, capture_output=True, text=True, timeout=120)
        assert after.returncode == 0 and after.stdout.strip() == "2.0", after.stderr
    finally:
        if producer is not None and producer.poll() is None:
            producer.kill()
            producer.wait(10)
        subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", env=mps, text=True, timeout=60)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (bench/gpu/run.sh shared runs it)")
def test_a_device_ring_reader_told_to_load_locally_trains_on_from_the_data_file(tmp_path, colo_executable):
    data = small_image_data(colo_executable, tmp_path)
    producer = _serve(colo_executable, data, 'device = "cuda"\n')
    assert producer.poll() is None, producer.stderr.read()
    _expect_loading_locally_once_the_producer_is_killed(data, producer, "cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (bench/gpu/run.sh shared runs it)")
def test_kill_9_on_the_device_ring_leaves_the_others_going_and_no_gpu_memory_held(tmp_path, colo_executable):
    data = _image_data_file(tmp_path, colo_executable, images=200, chunk=16)
    data.write_text(data.read_text() + "stall_s = 1\nheartbeat_timeout_s = 1\n")
    free_before, total = torch.cuda.mem_get_info()
    producer = _serve(colo_executable, data, 'device = "cuda"\n')
    assert producer.poll() is None, producer.stderr.read()
    victim, survivor = _consumer(data, 100000, 0.01, "cuda"), _consumer(data, 150, 0.005, "cuda")
    assert victim.stdout.readline().strip() == "ready", victim.stderr.read()
    time.sleep(0.5)
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)
    out, err = survivor.communicate(timeout=120)
    assert survivor.returncode == 0, err
    assert out.strip().endswith("done 150")
    # The producer's death ends a device-ring consumer with ProducerLost, as on the host path.
    reader = _consumer(data, 100000, 0.002, "cuda")
    assert reader.stdout.readline().strip() == "ready", reader.stderr.read()
    time.sleep(0.3)
    producer.send_signal(signal.SIGKILL)
    producer.wait(10)
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 3, (out, err)
    assert "stopped answering" in out
    # Every process that mapped the ring is gone, and so is its memory on the
    # GPU (nvidia-smi may list no PIDs inside a container: the free memory
    # is the check that always applies).
    pids = {producer.pid, victim.pid, survivor.pid, reader.pid}
    for _ in range(50):
        if not pids & _gpu_processes() and torch.cuda.mem_get_info()[0] >= free_before - (64 << 20):
            break
        time.sleep(0.2)
    assert not pids & _gpu_processes()
    assert torch.cuda.mem_get_info()[0] >= free_before - (64 << 20), (free_before, torch.cuda.mem_get_info(), total)
