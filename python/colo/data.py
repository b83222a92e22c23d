"""colo.data: batches from a shared loader, in your own training loop.

One `colo loader serve DATA.toml` decodes and augments the images once for
every job on the host; each job reads them through a `SharedLoader`, a
drop-in for a `torch.utils.data.DataLoader`:

    loader = colo.data.SharedLoader("DATA.toml", batch_size=128, device="cuda")
    for epoch in range(epochs):
        for inputs, labels in loader:      # float32, normalised, on `device`
            ...

Jobs may use different batch sizes and train at different speeds: with the
producer's default pace ("fastest") no job waits for a slower one, which
skips what it cannot keep up with; `pace = "slowest"` in DATA.toml makes
every job read every batch (the fastest waits). A job that joins late
starts from the batches the producer still holds. If the producer dies, the next
batch raises `colo.data.ProducerLost` (no silent fallback): save your
checkpoint and stop; or pass `on_producer_lost="load_locally"` and the job
goes on loading its own batches, with one line on stderr saying so. `LocalImageLoader` runs the same pipeline inside the
job, for a job that has no producer to share (and as the baseline).
"""
import atexit
import json
import math
import operator
import os
import queue
import sys
import threading
import time
import weakref

import torch


def _core():
    from colo import _core
    return _core


_live_loaders = weakref.WeakSet()
_closed_wait_s = [0.0]  # the waits of SharedLoaders already closed or garbage-collected
_had_loader = [False]


def data_wait_s():
    """Seconds this process's SharedLoaders have waited for data, summed
    (closed or garbage-collected ones included); None when it never had
    one. colo.report_progress puts it in the job's progress, so the
    scheduler records each job's data wait."""
    if not _had_loader[0]:
        return None
    return _closed_wait_s[0] + sum(loader._open_wait_s() for loader in list(_live_loaders))


def sleep_while_waiting(device):
    """Makes this process's threads sleep, not spin on a core, while they wait
    for the CUDA `device` (cudaDeviceScheduleBlockingSync). CUDA spins by
    default, and on a CPU-poor host a trainer spinning on the GPU takes the
    cores its loader (or a shared producer) decodes on. Best called before
    anything uses the device; SharedLoader and LocalImageLoader call it unless
    given `sleep_while_waiting=False`. Returns whether the device now sleeps
    while waiting (False on the CPU)."""
    device = torch.device(device) if device is not None else torch.device("cpu")
    return device.type == "cuda" and bool(_core().sleep_while_waiting(str(device)))


def __getattr__(name):
    if name == "ProducerLost":  # from the C++ module, loaded on first use
        return _core().ProducerLost
    raise AttributeError(name)


class ImageSet:
    """`loader.dataset`: the images a loader serves, as much of a torch
    Dataset as a training loop reads: len() is the images in one pass,
    `classes` the class folders' names in label order and `class_to_idx`
    each name's label, as torchvision's ImageFolder has them. Not
    indexable: its samples come decoded and augmented in batches, never one
    by one."""

    def __init__(self, size, classes):
        self.size, self.classes = int(size), list(classes)
        self.class_to_idx = {name: label for label, name in enumerate(self.classes)}

    def __len__(self):
        return self.size

    def __repr__(self):
        return f"ImageSet({self.size} images, {len(self.classes)} classes)"


# DataLoader arguments that a loop swapping its DataLoader for a colo loader
# passes out of habit and that change nothing here: the images are decoded
# on colo's own threads.
_WORKER_OPTIONS = ("num_workers", "persistent_workers", "prefetch_factor", "worker_init_fn")


def _take_dataloader_options(kind, options):
    """Checks the DataLoader arguments given to a colo loader. colo's loaders
    always shuffle (a fresh order each pass) and serve only full batches:
    shuffle=True and drop_last=True are accepted, False is a ValueError
    saying why; the worker options are accepted and have no effect; any
    other name is a TypeError, as for any function."""
    for name, value in options.items():
        if name == "shuffle" and value is not True:
            raise ValueError(f"colo.data.{kind}: shuffle={value!r}, but its images always come shuffled, in a fresh "
                             "order each pass; evaluate on a torch DataLoader over the test set")
        if name == "drop_last" and value is not True:
            raise ValueError(f"colo.data.{kind}: drop_last={value!r}, but it serves only full batches: "
                             "len(loader) = images // batch_size")
        if name not in ("shuffle", "drop_last") + _WORKER_OPTIONS:
            raise TypeError(f"colo.data.{kind}() got an unexpected keyword argument {name!r}")


def _take_batch_size(kind, batch_size):
    """`batch_size` as a DataLoader takes it: a positive integer (an int or
    anything with __index__, not a bool), else a ValueError saying so."""
    try:
        size = None if isinstance(batch_size, bool) else operator.index(batch_size)
    except TypeError:
        size = None
    if size is None or size <= 0:
        raise ValueError(f"colo.data.{kind}: batch_size should be a positive integer, got {batch_size!r}")
    return size


def _loader_address(source):
    """The address a SharedLoader reads: `source` itself when it is one
    (ipc://PATH, tcp://HOST:PORT), else the one the data file at path
    `source` (a str or a path object) names."""
    text = os.fspath(source) if isinstance(source, os.PathLike) else str(source)
    if "://" in text:
        return text
    if not os.path.isfile(text):
        raise FileNotFoundError(f"colo.data.SharedLoader: {text!r} is neither a loader address (ipc://PATH, "
                                "tcp://HOST:PORT) nor a data file (DATA.toml) that exists")
    return _core().loader_spec(text)["address"]


def _check_epoch_has_a_batch(kind, loader):
    """Raises ValueError when one pass holds no full batch (len(loader) is
    0), where a loop over epochs would train on nothing without a word."""
    if len(loader) == 0:
        raise ValueError(f"colo.data.{kind}: batch_size={loader.batch_size} is more than the "
                         f"{len(loader.dataset)} images of a pass, and only full batches are served: an epoch "
                         "would have no batch")


def _take_timeout(timeout):
    """SharedLoader's `timeout`: finite positive seconds, else a ValueError
    saying what it means here (a DataLoader's timeout=0 waits for ever)."""
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"colo.data.SharedLoader: timeout={timeout!r}, but it is the seconds of producer silence "
                         "after which ProducerLost is raised and must be positive and finite (no wait for ever, "
                         "as a DataLoader's timeout=0: a job whose producer died must stop)")
    return seconds


class _Normaliser:
    """uint8 [B, 3, H, W] on the host -> float32 normalised on `device`."""

    def __init__(self, mean, std, device, pin_memory, sleep):
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.sleeps_while_waiting = sleep and sleep_while_waiting(self.device)
        mean = torch.tensor(mean, dtype=torch.float64).view(1, -1, 1, 1)
        std = torch.tensor(std, dtype=torch.float64).view(1, -1, 1, 1)
        # (x / 255 - mean) / std as one multiply and one add: in place on a
        # GPU, in one pass from uint8 on the CPU (colo._core.normalise_pixels,
        # which takes them as lists of floats).
        self.scale = (1 / (255 * std)).to(self.device, torch.float32)
        self.shift = (-mean / std).to(self.device, torch.float32)
        self.scale_list = self.scale.flatten().tolist()
        self.shift_list = self.shift.flatten().tolist()
        self.pin = pin_memory and self.device.type == "cuda"

    def empty(self, shape, dtype):
        return torch.empty(shape, dtype=dtype, pin_memory=self.pin)

    def __call__(self, pixels, labels):
        if self.device.type == "cpu" and pixels.device.type == "cpu":
            x = torch.empty(pixels.shape, dtype=torch.float32)
            _core().normalise_pixels(pixels.contiguous(), x, self.scale_list, self.shift_list)
            return x, labels
        x = pixels.to(self.device, non_blocking=True).float()
        return x.mul_(self.scale).add_(self.shift), labels.to(self.device, non_blocking=True)


def _keep_wait_of(client):
    """A SharedLoader's last act, at close() or when it is garbage-collected
    without one: its data wait stays in data_wait_s()."""
    _closed_wait_s[0] += json.loads(client.stats())["wait_s"]


class SharedLoader:
    """Batches of `batch_size` from a running `colo loader serve`.

    `source` is the loader's address (ipc://..., tcp://...) or the path of
    its DATA.toml (the address is read from it); None takes the DATA.toml of the producer
    colo's scheduler runs for the job ($COLO_LOADER, set for a job whose job
    file names `loader = "DATA.toml"`). Iterating gives one epoch: len(self) =
    images // batch_size batches of (inputs, labels); `self.dataset` has
    len() = images and `classes` (their names). `timeout` is the producer
    silence, in seconds (positive), after which ProducerLost is raised. A
    DataLoader's shuffle=True, drop_last=True, num_workers,
    persistent_workers, prefetch_factor and worker_init_fn are accepted, so
    that swapping a DataLoader for it changes one name (shuffle=False and
    drop_last=False are refused: see _take_dataloader_options).

    On a CUDA `device`, when the producer keeps its ring on a GPU too
    (`device = "cuda"` in DATA.toml), batches are copied device to device
    from it (CUDA IPC): no host-to-device copy per consumer. `device_ring`
    = False, or a ring that cannot be mapped here, copies through host
    memory instead (`self.reads_device_ring` says which), from a pinned
    buffer unless `pin_memory` is False; batches served on the CPU are not
    pinned (give `device` rather than moving them). On CUDA the
    process's threads sleep while they wait for the GPU rather than spin
    (see sleep_while_waiting; `self.normalise.sleeps_while_waiting` says
    whether that took).

    Jobs that colo's scheduler launched together on one producer are its
    start group ($COLO_LOADER_START_GROUP): the first batch of each waits
    until all of them have asked for theirs (at most 20 s), so that they
    train side by side from the same chunk (docs/data.md).

    If the producer dies (silent for `timeout`), reading raises ProducerLost
    by default (`on_producer_lost="raise"`). With "load_locally" the loader
    prints one line on stderr and from then on decodes its batches itself,
    as a LocalImageLoader of the same DATA.toml would (so `source` must be
    the data file, not only its address): the loop goes on, slower and with
    its own decoding. `self.loads_locally` says whether that happened, and
    stats() then counts both parts, with `producer_lost` giving the reason.

    close(), or leaving a `with` block on it, says goodbye to the producer
    at once; after it len() and stats() still answer, and reading raises
    ValueError."""

    def __init__(self, source, batch_size, *, device=None, pin_memory=True, timeout=10.0, device_ring=True,
                 sleep_while_waiting=True, on_producer_lost="raise", **dataloader_options):
        _take_dataloader_options("SharedLoader", dataloader_options)
        if source is None:
            source = os.environ.get("COLO_LOADER")
            if not source:
                raise ValueError("colo.data.SharedLoader(None, ...): $COLO_LOADER is not set; run the job under colo "
                                 "with `loader = \"DATA.toml\"` in its job file, or pass the loader's address")
        self.address = _loader_address(source)
        self.data_file = None if "://" in str(os.fspath(source)) else os.path.abspath(os.fspath(source))
        if on_producer_lost not in ("raise", "load_locally"):
            raise ValueError(f"colo.data.SharedLoader: on_producer_lost={on_producer_lost!r}; expected \"raise\" "
                             "or \"load_locally\"")
        if on_producer_lost == "load_locally" and self.data_file is None:
            raise ValueError(f"colo.data.SharedLoader: on_producer_lost=\"load_locally\" needs the loader's data file "
                             f"(DATA.toml: its pipeline), not only its address {self.address!r}")
        self.on_producer_lost = on_producer_lost
        self.local = None  # the LocalImageLoader read once the producer was lost (load_locally)
        self._local_batches = None
        self.producer_lost = None  # why, once lost with load_locally
        self.batch_size = _take_batch_size("SharedLoader", batch_size)
        self.client = _core().SharedLoaderClient(self.address, self.batch_size, _take_timeout(timeout))
        self.batches_per_epoch = self.client.batches_per_epoch
        self.final_stats = None  # stats() as close() left them
        # Holds the connection until close(), or until this loader is
        # collected, and then counts its wait (the connection goes with it).
        self._finalise = weakref.finalize(self, _keep_wait_of, self.client)
        self.normalise = _Normaliser(self.client.mean, self.client.std, device, pin_memory, sleep_while_waiting)
        self.classes = self.client.classes
        self.dataset = ImageSet(self.client.epoch_samples, self.client.class_names)
        self.reader = None
        if device_ring and self.normalise.device.type == "cuda" and self.client.device_ring is not None:
            try:
                self.reader = _core().DeviceRingReader(self.client, str(self.normalise.device))
            except RuntimeError as error:
                print(f"colo: the shared loader's device ring cannot be read here ({error}); "
                      "copying through host memory", file=sys.stderr)
        self.reads_device_ring = self.reader is not None
        self._pin_memory, self._sleep_while_waiting = pin_memory, sleep_while_waiting
        _live_loaders.add(self)
        _had_loader[0] = True

    def __len__(self):
        return self.batches_per_epoch

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()

    def _open_client(self):
        if self.client is None:
            raise ValueError(f"colo.data.SharedLoader: the loader reading {self.address} is closed")
        return self.client

    @property
    def loads_locally(self):
        """Whether the producer was lost and this loader now decodes for itself."""
        return self.local is not None

    def next_batch(self):
        """One batch (inputs, labels), whatever the epoch."""
        if self.local is not None:
            return next(self._local_batches)
        self._open_client()
        try:
            return self._next_shared_batch()
        except _core().ProducerLost as lost:
            self._load_locally(lost)
            return next(self._local_batches)

    def _load_locally(self, lost):
        """Re-raises `lost` (on_producer_lost="raise"); else drops the lost
        producer and reads on from a LocalImageLoader of the same data file."""
        if self.on_producer_lost == "raise":
            raise lost
        print(f"colo: {lost}; this job now loads its own batches from {self.data_file}", file=sys.stderr, flush=True)
        self.producer_lost = str(lost)
        self.final_stats = self.stats()
        self.reader = None
        self.client = None
        self._finalise()  # counts the shared part's wait
        self.local = LocalImageLoader(self.data_file, self.batch_size, device=str(self.normalise.device),
                                      pin_memory=self._pin_memory, sleep_while_waiting=self._sleep_while_waiting)

        def every_epoch(local):
            while True:
                yield from local

        self._local_batches = every_epoch(self.local)

    def _open_wait_s(self):
        """The data wait of this loader not yet counted in data_wait_s's closed part."""
        if self.client is not None:
            return json.loads(self.client.stats())["wait_s"]
        return self.local.wait_s if self.local is not None else 0.0

    def _next_shared_batch(self):
        if self.reader is not None:
            return self.normalise(*self.reader.next_batch())
        if self.normalise.device.type == "cpu":  # straight from the ring, one pass, no copy
            inputs = torch.empty([self.batch_size] + list(self.client.sample_shape), dtype=torch.float32)
            labels = torch.empty([self.batch_size], dtype=torch.int64)
            self.client.next_batch_normalised(inputs, labels, self.normalise.scale_list, self.normalise.shift_list)
            return inputs, labels
        pixels = self.normalise.empty([self.batch_size] + list(self.client.sample_shape), torch.uint8)
        labels = self.normalise.empty([self.batch_size], torch.int64)
        self.client.next_batch(pixels, labels)
        return self.normalise(pixels, labels)

    def __iter__(self):
        _check_epoch_has_a_batch("SharedLoader", self)
        for _ in range(len(self)):
            yield self.next_batch()

    def start_reading(self):
        """Holds the producer's ring from now on, as the first batch does.
        A consumer holds nothing while its job starts, and begins at the
        oldest chunk still held when it first reads; loaders that call this
        before any of them reads all see the same stream."""
        if self.local is not None:
            return
        try:
            self._open_client().start_reading()
        except _core().ProducerLost as lost:
            self._load_locally(lost)

    def stats(self):
        """This consumer's counters: batches, samples, wait_s, elapsed_s,
        samples_per_s, chunks_skipped (once closed, as they were then);
        after the producer was lost with load_locally, the shared and the
        local part summed, with loads_locally and producer_lost."""
        if self.local is not None:
            local, merged = self.local.stats(), dict(self.final_stats)
            for key in ("batches", "samples", "wait_s", "elapsed_s"):
                merged[key] += local[key]
            merged["samples_per_s"] = merged["samples"] / max(merged["elapsed_s"], 1e-9)
            return {**merged, "loads_locally": True, "producer_lost": self.producer_lost}
        if self.client is None:
            return dict(self.final_stats)
        return json.loads(self.client.stats())

    def close(self):
        """Says goodbye to the producer (also done when garbage-collected);
        closing again does nothing."""
        if self.local is not None:
            self.final_stats = self.stats()
            _closed_wait_s[0] += self.local.wait_s
            self._local_batches.close()  # stops its decode thread
            self.local.close()
            self.local = None
        if self.client is not None:
            self.final_stats = self.stats()
        self.reader = None
        self.client = None
        self._finalise()  # counts the wait and lets the connection go: the goodbye leaves now


class LocalImageLoader:
    """The same pipeline as `colo loader serve DATA.toml`, run inside this job
    on `threads` decode threads (default: the file's), `prefetch` batches
    ahead on a background thread, as a DataLoader's workers would. Read as
    a SharedLoader is (len(), iteration, `dataset`, stats(), close()), less
    next_batch() and start_reading(); shuffles with `seed` + epoch, the epoch
    counting every iter(), ended early or not. After close() (or a `with`
    block on it) reading raises ValueError."""

    def __init__(self, data_file, batch_size, *, device=None, pin_memory=True, threads=0, seed=0, prefetch=2,
                 sleep_while_waiting=True, **dataloader_options):
        _take_dataloader_options("LocalImageLoader", dataloader_options)
        self.batch_size = _take_batch_size("LocalImageLoader", batch_size)
        data_file = os.fspath(data_file)
        if not os.path.isfile(data_file):
            raise FileNotFoundError(f"colo.data.LocalImageLoader: no data file at {data_file!r}")
        self.decoder = _core().ImageDecoder(data_file, int(threads))
        self.normalise = _Normaliser(self.decoder.mean, self.decoder.std, device, pin_memory, sleep_while_waiting)
        self.classes = self.decoder.classes
        self.dataset = ImageSet(self.decoder.size, self.decoder.class_names)
        self.seed, self.epoch, self.prefetch = seed, 0, max(1, prefetch)
        self.wait_s = 0.0
        self.batches = 0
        self.started = time.perf_counter()
        self.closed = False

    def __len__(self):
        return self.decoder.size // self.batch_size

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        self.close()

    def close(self):
        """Ends reading: an epoch still open raises ValueError at its next batch."""
        self.closed = True

    def _check_open(self):
        if self.closed:
            raise ValueError("colo.data.LocalImageLoader: the loader is closed")

    def stats(self):
        """Its counters as SharedLoader.stats() names them: batches, samples,
        wait_s (for its decode thread), and elapsed_s and samples_per_s
        since it was made."""
        elapsed = time.perf_counter() - self.started
        samples = self.batches * self.batch_size
        return {"batches": self.batches, "samples": samples, "wait_s": self.wait_s, "elapsed_s": elapsed,
                "samples_per_s": samples / max(elapsed, 1e-9)}

    def _produce(self, epoch, out, stop):
        order = torch.randperm(self.decoder.size, generator=torch.Generator().manual_seed(self.seed + epoch))
        side = self.decoder.side
        try:
            for b in range(len(self)):
                if stop.is_set():
                    return
                indices = order[b * self.batch_size:(b + 1) * self.batch_size].contiguous()
                pixels = self.normalise.empty([self.batch_size, 3, side, side], torch.uint8)
                labels = self.normalise.empty([self.batch_size], torch.int64)
                self.decoder.fill(indices, epoch, pixels, labels)
                out.put((pixels, labels))
        except Exception as error:  # noqa: BLE001 - handed to the consumer
            out.put(error)

    def __iter__(self):
        self._check_open()
        _check_epoch_has_a_batch("LocalImageLoader", self)
        # Each pass its own order, whether or not the last one ran to its end.
        epoch, self.epoch = self.epoch, self.epoch + 1
        out, stop = queue.Queue(self.prefetch), threading.Event()
        worker = threading.Thread(target=self._produce, args=(epoch, out, stop), daemon=True)
        worker.start()
        _decoding_workers.add((worker, out, stop))
        try:
            for _ in range(len(self)):
                self._check_open()
                clock = time.perf_counter()
                item = out.get()
                self.wait_s += time.perf_counter() - clock
                if isinstance(item, Exception):
                    raise item
                self.batches += 1
                yield self.normalise(*item)
        finally:
            _stop_decoding(worker, out, stop)
            _decoding_workers.discard((worker, out, stop))


def _stop_decoding(worker, out, stop):
    """Stops an epoch's decode thread: it may be waiting to put a batch."""
    stop.set()
    while worker.is_alive():
        try:
            out.get_nowait()
        except queue.Empty:
            worker.join(0.01)


# Epochs still decoding. Left to run into the interpreter's end, a decode
# thread inside colo's C++ code is killed there when it takes the GIL
# back, and that aborts the process (std::terminate): a script that ends
# with an iterator still open would exit with SIGABRT instead of 0.
_decoding_workers = set()


@atexit.register
def _stop_every_decoding():
    for entry in list(_decoding_workers):
        _stop_decoding(*entry)
