"""colo.data's loaders used as the torch.utils.data.DataLoader they replace:
what a training script written for a DataLoader does with them (its
arguments, epochs left early, closing, metrics) behaves as a DataLoader
would, or is refused with the reason, against a real `colo loader serve`."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import colo.data
from loader_support import serve, small_image_data


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One running producer over 300 synthetic 32 px JPEGs for the module's
    tests; yields its DATA.toml's path."""
    colo_executable = os.environ.get("COLO_EXECUTABLE", "")
    if not os.path.exists(colo_executable):
        pytest.fail(f"COLO_EXECUTABLE={colo_executable!r} is not the built colo binary")
    data = small_image_data(colo_executable, tmp_path_factory.mktemp("served"))
    producer = _serve(data)
    yield data
    producer.send_signal(signal.SIGINT)
    producer.wait(10)


def _serve(data):
    """Starts `colo loader serve data`; returns the process once it answers."""
    return serve(os.environ["COLO_EXECUTABLE"], data, colo.data._core().loader_spec(str(data))["address"])


def _both(data):
    """Makers of the two loaders over `data`: (name, make(batch_size, **options))."""
    return [("SharedLoader", lambda batch_size, **o: colo.data.SharedLoader(str(data), batch_size, **o)),
            ("LocalImageLoader", lambda batch_size, **o: colo.data.LocalImageLoader(str(data), batch_size, **o))]


@pytest.mark.parametrize("batch_size", [0, -1, 2.5, "32", None, True])
def test_a_batch_size_a_dataloader_would_refuse_is_refused_by_both_loaders(served, batch_size):
    # 2.5 and "32" were taken as 2 and 32; LocalImageLoader took 0 and -1
    # and failed later in len() (ZeroDivisionError, "__len__() should
    # return >= 0").
    for kind, make in _both(served):
        with pytest.raises(ValueError, match=f"colo.data.{kind}: batch_size should be a positive integer"):
            make(batch_size)


def test_an_epoch_left_early_still_moves_the_local_loader_to_a_fresh_order(served):
    # The epoch counter moved only when an epoch ran to its end: a loop that
    # breaks early (max steps per epoch, a peek with next(iter(loader)))
    # read the same first batches, in the same order, every epoch.
    loader = colo.data.LocalImageLoader(str(served), 20)
    firsts = []
    for _ in range(3):
        for inputs, labels in loader:
            firsts.append(labels.clone())
            break
    firsts.append(next(iter(loader))[1])
    assert all(not torch.equal(a, b) for i, a in enumerate(firsts) for b in firsts[i + 1:]), firsts


def _producer_stats(data):
    address = colo.data._core().loader_spec(str(data))["address"]
    status = [os.environ["COLO_EXECUTABLE"], "loader", "status", address, "--timeout", "2"]
    return json.loads(subprocess.run(status, capture_output=True, text=True, check=True).stdout)


def test_a_with_block_closes_the_loader_and_a_closed_loader_says_so(served):
    # Neither loader was a context manager (TypeError), and a closed
    # SharedLoader failed with "'NoneType' object has no attribute ..."
    # in len(), stats() and reading.
    with colo.data.SharedLoader(str(served), 20) as shared:
        for step, (inputs, labels) in enumerate(shared):
            if step == 2:
                break
    assert shared.client is None
    (gone,) = [c for c in _producer_stats(served)["consumer_stats"] if c["consumer"] == shared.stats()["consumer"]]
    assert gone.get("left"), "its goodbye reached the producer at the block's end"
    assert len(shared) == 300 // 20 and shared.stats()["batches"] == 3
    for read in (lambda: next(iter(shared)), shared.next_batch, shared.start_reading):
        with pytest.raises(ValueError, match="SharedLoader: the loader reading ipc://.*loader.sock is closed"):
            read()
    shared.close()  # again: nothing
    with colo.data.LocalImageLoader(str(served), 20) as local:
        epoch = iter(local)
        next(epoch)
    with pytest.raises(ValueError, match="LocalImageLoader: the loader is closed"):
        next(epoch)
    with pytest.raises(ValueError, match="LocalImageLoader: the loader is closed"):
        next(iter(local))
    assert len(local) == 300 // 20


def test_a_loader_dropped_without_close_keeps_its_data_wait_in_the_jobs_record(served):
    # Only close() added a loader's wait to colo.data.data_wait_s() (the
    # job's data_wait_pct): a loop that made a new loader each epoch and
    # let the old one go lost the waits of all but the last.
    import gc
    for epoch in range(2):
        loader = colo.data.SharedLoader(str(served), 20)
        for _ in range(3):
            loader.next_batch()
        waited = loader.stats()["wait_s"]
        assert waited > 0  # the first batch waits for the producer's answer at least
        before = colo.data.data_wait_s()
        del loader
        gc.collect()
        assert colo.data.data_wait_s() == pytest.approx(before), epoch


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), float("nan")])
def test_a_timeout_that_is_no_positive_number_of_seconds_is_refused_with_its_meaning(served, timeout):
    # A DataLoader's timeout=0 means "wait for ever"; here it made a running
    # producer look dead ("no producer answered ... within 0 s (is `colo
    # loader serve` running?)").
    with pytest.raises(ValueError, match="timeout=.*producer.*silence.*positive"):
        colo.data.SharedLoader(str(served), 20, timeout=timeout)


def test_a_data_file_is_taken_as_a_path_object_and_a_missing_one_is_a_file_not_found(served, tmp_path):
    # A pathlib.Path was a TypeError from the bindings (loader_spec(): incompatible
    # function arguments); a missing DATA.toml a RuntimeError; a path that did not
    # end in .toml was taken for an address ("cannot connect to 'DATA.cfg': Invalid argument").
    import pathlib
    with colo.data.SharedLoader(pathlib.Path(served), 20) as shared:
        assert shared.address == colo.data.SharedLoader(str(served), 20).address
    assert len(colo.data.LocalImageLoader(pathlib.Path(served), 20)) == 15
    for missing in (tmp_path / "nothere.toml", str(tmp_path / "DATA.cfg")):
        with pytest.raises(FileNotFoundError, match=f"SharedLoader: '{missing}' is neither a loader address"):
            colo.data.SharedLoader(missing, 20)
        with pytest.raises(FileNotFoundError, match=f"LocalImageLoader: no data file at '{missing}'"):
            colo.data.LocalImageLoader(missing, 20)


def test_the_dataset_maps_class_names_to_labels_as_an_image_folder_does(served):
    # ImageFolder's class_to_idx (read to name predictions, or saved with a
    # checkpoint) was missing: AttributeError.
    folders = sorted(os.listdir(served.parent / "images"))
    for kind, make in _both(served):
        dataset = make(20).dataset
        assert dataset.classes == folders, kind
        assert dataset.class_to_idx == {name: label for label, name in enumerate(folders)}, kind


def test_an_epoch_that_cannot_hold_one_full_batch_is_an_error_not_an_empty_loop(served):
    # With more samples a batch than images a pass, len() is 0: a training
    # loop over epochs ran no step and ended as if it had trained (and one
    # that repeats `yield from loader` spun for ever).
    for kind, make in _both(served):
        loader = make(301)
        assert len(loader) == 0
        with pytest.raises(ValueError, match=f"{kind}: batch_size=301 is more than the 300 images of a pass"):
            for inputs, labels in loader:
                pass
    shared = colo.data.SharedLoader(str(served), 301)
    assert shared.next_batch()[1].shape == (301,), "a batch at a time, as many as asked for, still"


def test_a_loader_that_joins_late_counts_no_chunk_from_before_it_connected_as_skipped(served):
    # A consumer counted as skipped every chunk the producer had published
    # since it started: a job that joined a running producer reported
    # hundreds of chunks_skipped (in stats() and the producer's
    # consumer_stats) before it had fallen behind at all.
    with colo.data.SharedLoader(str(served), 20) as early:
        for _ in range(30):  # 600 samples: 38 chunks of 16 through a ring of 4
            early.next_batch()
        with colo.data.SharedLoader(str(served), 20) as late:
            late.next_batch()
            consumer, skipped = late.stats()["consumer"], late.stats()["chunks_skipped"]
    assert skipped <= 4, "at most the ring it found when it connected"
    (reported,) = [c for c in _producer_stats(served)["consumer_stats"] if c["consumer"] == consumer]
    assert reported["chunks_skipped"] == skipped


def test_a_fractional_timeout_is_named_as_given_when_no_producer_answers(tmp_path):
    # The seconds were cut to an int: timeout=0.5 said "within 0 s".
    address = f"ipc://{tmp_path}/none.sock"
    with pytest.raises(colo.data.ProducerLost, match=f"no producer answered at {address} within 0.5 s "):
        colo.data.SharedLoader(address, 8, timeout=0.5)


def test_ctrl_c_while_waiting_for_the_producer_interrupts_at_once(served, tmp_path):
    # Ctrl-C in a loop waiting on a producer that does not answer raised
    # RuntimeError('Interrupted system call') from ZeroMQ's poll, ahead of
    # the KeyboardInterrupt, so `except KeyboardInterrupt: save()` missed it
    # (and the wait, in C++ without the GIL, checked for no signal). Now it
    # is a KeyboardInterrupt at once, and the loader reads on afterwards.
    data = tmp_path / "data.toml"
    data.write_text(f'root = "{served.parent / "images"}"\nsize = 24\nthreads = 1\nchunk = 16\nbuffer = 4\n'
                    f'address = "ipc://{tmp_path}/stopped.sock"\n')
    producer = _serve(data)
    code = textwrap.dedent(f"""\
        import sys, time, colo.data
        loader = colo.data.SharedLoader({str(data)!r}, 8, timeout=30)
        loader.next_batch()
        print("ready", flush=True)
        started = time.time()
        try:
            while True:
                loader.next_batch()
        except KeyboardInterrupt:
            print("interrupted after", round(time.time() - started, 1), flush=True)
        sys.stdin.readline()  # the producer goes on
        print("then read", loader.next_batch()[1].shape[0], flush=True)
        """)
    consumer = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    try:
        assert consumer.stdout.readline().strip() == "ready", consumer.stderr.read()
        producer.send_signal(signal.SIGSTOP)  # it answers nothing more
        time.sleep(0.5)
        consumer.send_signal(signal.SIGINT)
        # Before: RuntimeError('Interrupted system call') from ZeroMQ's poll, then the KeyboardInterrupt.
        interrupted = consumer.stdout.readline()
        assert interrupted.startswith("interrupted after") and float(interrupted.split()[-1]) < 5, (
            interrupted, consumer.stderr.read() if not interrupted else "")
        producer.send_signal(signal.SIGCONT)
        out, err = consumer.communicate("go\n", timeout=10)
        assert out.strip() == "then read 8", (out, err)
    finally:
        consumer.kill()
        producer.send_signal(signal.SIGCONT)
        producer.send_signal(signal.SIGINT)
        producer.wait(10)


def test_the_local_loader_counts_what_it_served_as_the_shared_one_does(served):
    # "Same interface as SharedLoader", but stats() was an AttributeError,
    # so a script comparing the two (LocalImageLoader is the baseline) failed.
    local = colo.data.LocalImageLoader(str(served), 20)
    for inputs, labels in local:
        pass
    stats = local.stats()
    assert (stats["batches"], stats["samples"]) == (15, 300)
    assert 0 < stats["wait_s"] <= stats["elapsed_s"]
    assert stats["samples_per_s"] == pytest.approx(300 / stats["elapsed_s"], rel=0.1)
    assert set(stats) <= set(colo.data.SharedLoader(str(served), 20).stats())
