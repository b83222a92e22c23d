"""colo.fuse.sweep: a hyper-parameter sweep over your own model, trained as
fused arrays, with successive halving. The configurations and the halving
rule are colo's C++ ones (fuse/sweep_plan.h), the same `colo sweep` uses, so
a grid or a seeded random draw gives the same configurations in both."""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

from colo.fuse.adapters import adapter_rank_axes
from colo.fuse.optim import optimizer as make_optimizer
from colo.fuse.stacking import FuseError
from colo.fuse.trainer import Trainer
from colo.progress import report_progress

# Axes that go to the optimiser; "seed" seeds each model's initialisation;
# every other axis is a keyword argument of build_model.
OPTIMIZER_AXES = ("optimizer", "lr", "momentum", "weight_decay", "beta1", "beta2", "eps", "nesterov")
_OPTIMIZER_DEFAULTS = {"optimizer": "sgd", "lr": None, "momentum": 0.0, "weight_decay": 0.0, "beta1": 0.9,
                       "beta2": 0.999, "eps": 1e-8, "nesterov": False}


def _core():
    try:
        from colo import _core
    except ImportError as e:
        raise ImportError(f"colo.fuse.sweep needs colo's compiled core (run `make`): {e}") from e
    return _core


def configurations(axes, sampling="grid", count=0, seed=0):
    """The sweep's configurations (dicts of axis values), in colo's order:
    `axes` maps a name to a list of values or, for random sampling, to a
    range {"min": a, "max": b, "log": bool}."""
    if sampling not in ("grid", "random"):
        raise FuseError(f"colo.fuse.sweep: sampling is grid or random, not {sampling!r}")
    if sampling == "random" and count < 1:
        raise FuseError("colo.fuse.sweep: random sampling needs count >= 1")
    described = []
    for name, spec in axes.items():
        if isinstance(spec, dict):
            if sampling != "random":
                raise FuseError(f"colo.fuse.sweep: axis {name!r} is a range, which only random sampling takes")
            described.append({"name": name, "min": float(spec["min"]), "max": float(spec["max"]),
                              "log": bool(spec.get("log", False))})
        elif isinstance(spec, (list, tuple)) and spec:
            described.append({"name": name, "values": list(spec)})
        else:
            raise FuseError(f"colo.fuse.sweep: axis {name!r} needs a non-empty list of values or a range")
    return json.loads(_core().expand_axes_json(json.dumps(described), sampling, count, seed))


class _Member:
    """One configuration: its index, values, optimiser settings and model arguments."""

    def __init__(self, index, values, base_optimizer):
        self.index, self.values = index, values
        self.optimizer = dict(_OPTIMIZER_DEFAULTS, **base_optimizer)
        self.optimizer.update({k: v for k, v in values.items() if k in OPTIMIZER_AXES})
        self.model_args = {k: v for k, v in values.items() if k not in OPTIMIZER_AXES and k != "seed"}
        self.seed = values.get("seed", index)
        self.restart(0)

    def restart(self, array):
        """Forgets any training: the member starts again in array `array`."""
        self.epochs = self.samples = 0
        self.stopped = False
        self.test_accuracy = self.best_test_accuracy = self.loss = 0.0
        self.array = array

    def build(self, build_model):
        torch.manual_seed(self.seed)
        return build_model(**self.model_args)

    def result(self):
        return {"model": self.index, "values": self.values, "array": self.array, "epochs": self.epochs,
                "stopped": self.stopped, "test_accuracy": self.test_accuracy,
                "best_test_accuracy": self.best_test_accuracy, "loss": self.loss}


def _signature(model):
    """The model's state_dict shapes, LoRA ranks left out: adapters of
    different ranks fuse into one array (colo.fuse pads them)."""
    ranks = adapter_rank_axes(model)
    return tuple((k, tuple("rank" if ranks.get(k) == axis else size for axis, size in enumerate(v.shape)))
                 for k, v in model.state_dict().items())


def _arrays(members, build_model, max_array):
    """Members grouped into arrays that can fuse: one optimiser and one
    architecture each, at most max_array models (0: no limit)."""
    signatures, groups = {}, {}
    for m in members:
        arguments = json.dumps(m.model_args, sort_keys=True)
        if arguments not in signatures:  # one model per distinct set of arguments
            signatures[arguments] = _signature(m.build(build_model))
        key = (m.optimizer["optimizer"], bool(m.optimizer["nesterov"]), signatures[arguments])
        groups.setdefault(key, []).append(m)
    arrays = []
    for group in groups.values():
        size = max_array or len(group)
        arrays.extend(group[i:i + size] for i in range(0, len(group), size))
    return arrays


class _Array:
    """One fused array being trained: its members still training, the fused
    module, optimiser and trainer."""

    def __init__(self, members, build_model, device, options, states=None, optimizer_state=None):
        from colo.fuse import fuse
        self.members = members
        models = [m.build(build_model) for m in members]
        if states is not None:
            for model, state in zip(models, states):
                model.load_state_dict(state)
        self.fused = fuse(models, channels_last=options["channels_last"]).to(device)
        per = (lambda key: [m.optimizer[key] for m in members])
        first = members[0].optimizer
        self.optimizer = make_optimizer(self.fused, first["optimizer"], lr=per("lr"), momentum=per("momentum"),
                                        weight_decay=per("weight_decay"), nesterov=first["nesterov"],
                                        betas=list(zip(per("beta1"), per("beta2"))), eps=per("eps"))
        if optimizer_state is not None:
            for new, old in zip(self.optimizer.state(), optimizer_state):
                new.copy_(_cut_to(old, new.shape))
        self.trainer = Trainer(self.fused, self.optimizer, options["loss_fn"], cuda_graph=options["cuda_graph"],
                               bf16=options["bf16"])

    def keep(self, positions, build_model, device, options):
        """The array compacted to the members at `positions`, their weights,
        buffers and optimiser state carried over."""
        from colo.fuse import unfuse
        states = unfuse(self.fused)
        index = torch.tensor(positions, device=device)
        old_state = self.optimizer.state()
        carried = [s.index_select(0, index) for s in old_state[:-1]] + [old_state[-1]]
        return _Array([self.members[p] for p in positions], build_model, device, options,
                      [states[p] for p in positions], carried)


def _cut_to(state, shape):
    """Optimiser state of a kept model cut to the new array's shape: an array
    whose largest adapter rank stopped pads to a smaller rank, and the cut
    entries (padding) are zero."""
    for axis, size in enumerate(shape):
        if state.shape[axis] != size:
            state = state.narrow(axis, 0, size)
    return state


def _to(batch, device):
    inputs, targets = batch
    return inputs.to(device, non_blocking=True), targets.to(device, non_blocking=True)


def _print_progress(record):
    if record["position"] == 0:
        print(f"colo.fuse.sweep: array {record['array'] + 1}/{record['arrays']} ({record['models']} models) "
              f"epoch {record['epoch']}: best test accuracy {record['array_best']:.4f}, "
              f"{record['samples_per_s']:.0f} samples/s", file=sys.stderr, flush=True)


def sweep(build_model, axes, train_batches, test_batches, *, epochs, optimizer=None, sampling="grid", count=0,
          seed=0, halving=None, device=None, max_array=0, cuda_graph=False, bf16=False, channels_last=False,
          loss_fn=F.cross_entropy, on_epoch=_print_progress, out=None, only=None, max_steps=None):
    """Trains every configuration of `axes` on your model and ranks them.

    build_model(**kwargs) builds one model; axes other than the optimiser's
    (optimizer, lr, momentum, weight_decay, beta1, beta2, eps, nesterov) and
    "seed" (each model's initialisation; default its index) are its keyword
    arguments. `optimizer` gives settings no axis varies (e.g. {"lr": 0.1}).
    `train_batches`/`test_batches` are iterables of (inputs, targets),
    re-iterated every epoch (a DataLoader). Configurations that share an
    optimiser and an architecture train as one fused array, arrays one
    after another. `halving` = {"rungs": [epochs], "keep": 0.5} stops the
    worse models of each array at each rung (by test accuracy).

    `on_epoch(record)` is called per model and epoch (default: a progress
    line per array on stderr). With `out`, writes sweep.jsonl, results.json
    and model-<k>/{config.json,state.pt} there. `only` (configuration
    indices) trains those configurations alone, as `colo sweep --only`;
    `max_steps` stops every model after that many optimiser steps, as
    `colo sweep --max-steps`. Training reports its samples to `colo compare`
    and colo's scheduler (colo.report_progress). Returns one record per model,
    best final test accuracy first (model, values, array, epochs, stopped,
    test_accuracy, best_test_accuracy, loss)."""
    _check_count("epochs", epochs)
    if max_steps is not None:
        _check_count("max_steps", max_steps)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    configs = configurations(axes, sampling, count, seed)
    members = [_Member(i, values, optimizer or {}) for i, values in enumerate(configs)]
    if only is not None:
        missing = sorted(set(only) - set(range(len(members))))
        if missing:
            raise FuseError(f"colo.fuse.sweep: only names configuration(s) {missing}, but the axes give "
                            f"{len(members)} (0 to {len(members) - 1})")
        members = [m for m in members if m.index in set(only)]
    for m in members:
        _check_optimizer(m)
    rungs, keep = _halving(halving)
    if rungs and rungs[-1] >= epochs:
        raise FuseError(f"colo.fuse.sweep: halving rungs must come before the last epoch (epochs={epochs}): "
                        f"a rung at or after it stops no model early, got {rungs}")
    options = {"channels_last": channels_last, "cuda_graph": cuda_graph, "bf16": bf16, "loss_fn": loss_fn,
               "rungs": rungs, "keep": keep, "epochs": epochs, "device": device, "out": out,
               "max_steps": max_steps, "progress": {"samples": 0, "train_s": 0.0}}
    pending = _arrays(members, build_model, max_array)
    log = None
    if out:
        os.makedirs(out, exist_ok=True)
        log = open(os.path.join(out, "sweep.jsonl"), "w")

    def report(record):
        if log:
            log.write(json.dumps(record) + "\n")
        if on_epoch:
            on_epoch(record)

    started, done = time.perf_counter(), []
    try:
        while pending:
            array_members = pending.pop(0)
            for m in array_members:
                m.restart(len(done))
            try:
                _train_array(array_members, build_model, train_batches, test_batches, options,
                             len(done) + 1 + len(pending), report)
                done.append(array_members)
            except RuntimeError as error:
                if not _out_of_memory(error):
                    raise
                if len(array_members) == 1:
                    raise FuseError(f"colo.fuse.sweep: model {array_members[0].index} alone does not fit in "
                                    f"{device} memory ({error})") from error
                half = (len(array_members) + 1) // 2
                print(f"colo.fuse.sweep: an array of {len(array_members)} models ran out of {device} memory; "
                      f"splitting it into {half} + {len(array_members) - half} and restarting both",
                      file=sys.stderr, flush=True)
                report({"event": "split", "models": [m.index for m in array_members], "sizes":
                        [half, len(array_members) - half]})
                pending[:0] = [array_members[:half], array_members[half:]]
                if device.type == "cuda":
                    torch.cuda.empty_cache()
    finally:
        if log:
            log.close()
    arrays = done
    ranked = sorted((m.result() for m in members), key=lambda r: -r["test_accuracy"])
    if out:
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump({"models": ranked, "arrays": len(arrays), "array_sizes": [len(x) for x in arrays],
                       "total_s": time.perf_counter() - started, "device": str(device)}, f, indent=2)
    return ranked


def _check_count(name, value):
    """`value` is a whole number >= 1, as `colo sweep` requires of its file."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise FuseError(f"colo.fuse.sweep: {name} must be a whole number >= 1, got {value!r}")


# The ranges `colo sweep` accepts for each optimiser setting (fuse/sweep_spec.cpp).
_OPTIMIZER_RANGES = {"momentum": (0.0, 1.0, "a momentum in [0, 1)"), "weight_decay": (0.0, None, "a weight decay >= 0"),
                     "beta1": (0.0, 1.0, "beta1 in [0, 1)"), "beta2": (0.0, 1.0, "beta2 in [0, 1)")}


def _check_optimizer(member):
    """The member's optimiser settings are ones `colo sweep` would train;
    FuseError naming the configuration and the value otherwise."""
    o, where = member.optimizer, f"colo.fuse.sweep: configuration {member.index} ({member.values})"
    if o["optimizer"] not in ("sgd", "adam", "adamw"):
        raise FuseError(f"{where}: optimizer is sgd, adam or adamw, not {o['optimizer']!r}")
    if o["lr"] is None:
        if o["optimizer"] == "sgd":
            raise FuseError("colo.fuse.sweep: sgd needs lr (an axis or optimizer={'lr': ...})")
    elif not o["lr"] > 0:
        raise FuseError(f"{where}: expected a learning rate > 0, got lr={o['lr']!r}")
    for name, (low, high, what) in _OPTIMIZER_RANGES.items():
        value = o[name]
        if not (value >= low and (high is None or value < high)):
            raise FuseError(f"{where}: expected {what}, got {name}={value!r}")
    if not o["eps"] > 0:
        raise FuseError(f"{where}: expected eps > 0, got eps={o['eps']!r}")


def _halving(halving):
    """(rungs, keep) from sweep's `halving` argument, checked."""
    if not halving:
        return [], 1.0
    unknown = set(halving) - {"rungs", "keep"}
    if unknown:
        raise FuseError(f"colo.fuse.sweep: halving has unknown key(s) {sorted(unknown)} (known: rungs, keep)")
    rungs = halving.get("rungs")
    if not rungs or any(not isinstance(r, int) or isinstance(r, bool) or r < 1 for r in rungs):
        raise FuseError(f"colo.fuse.sweep: halving rungs must be a non-empty list of epochs (1, 2, ...), "
                        f"got {rungs!r}")
    keep = halving.get("keep", 0.5)
    if not isinstance(keep, (int, float)) or isinstance(keep, bool) or not 0 < keep < 1:
        raise FuseError(f"colo.fuse.sweep: halving keep must be a fraction in (0, 1), got {keep!r}")
    return sorted(set(rungs)), float(keep)


def _out_of_memory(error):
    return isinstance(error, torch.cuda.OutOfMemoryError) or "out of memory" in str(error)


def _train_array(members, build_model, train_batches, test_batches, options, arrays, report):
    """Trains one array through every epoch, stopping models at halving rungs;
    calls `report` per model and epoch."""
    device, out = options["device"], options["out"]
    array = _Array(members, build_model, device, options)
    progress, max_steps, steps = options["progress"], options["max_steps"], 0
    for epoch in range(1, options["epochs"] + 1):
        array.trainer.reset_totals()
        clock = time.perf_counter()
        for batch in train_batches:
            if max_steps and steps >= max_steps:
                break
            inputs, targets = _to(batch, device)
            array.trainer.step(inputs, targets)
            steps += 1
            done = progress["samples"] + array.trainer.samples * len(array.members)
            report_progress(done, progress["train_s"] + time.perf_counter() - clock)
        if device.type == "cuda":
            torch.cuda.synchronize(device)  # the epoch's steps are queued, not yet trained
        train_s = time.perf_counter() - clock
        samples = array.trainer.samples
        progress["samples"] += samples * len(array.members)
        progress["train_s"] += train_s
        losses = (array.trainer.loss_sums / max(samples, 1)).tolist()
        correct = array.trainer.correct.tolist()
        tests = array.trainer.evaluate(_to(b, device) for b in test_batches)
        best = max(tests["accuracy"]) if tests["accuracy"] else 0.0
        for k, m in enumerate(array.members):
            m.epochs, m.loss = epoch, losses[k]
            m.samples += samples
            m.test_accuracy = tests["accuracy"][k] if tests["accuracy"] else 0.0
            m.best_test_accuracy = max(m.best_test_accuracy, m.test_accuracy)
            report({"model": m.index, "array": m.array, "arrays": arrays, "models": len(array.members),
                    "position": k, "values": m.values, "epoch": epoch, "samples": m.samples, "loss": m.loss,
                    "train_accuracy": correct[k] / max(samples, 1), "test_accuracy": m.test_accuracy,
                    "test_loss": tests["loss"][k] if tests["loss"] else None,
                    "samples_per_s": samples * len(array.members) / max(train_s, 1e-9), "array_best": best})
        if epoch in options["rungs"] and len(array.members) > 1 and epoch < options["epochs"]:
            survivors = _core().halving_survivors(tests["accuracy"], options["keep"])
            if len(survivors) < len(array.members):
                stopped = [k for k in range(len(array.members)) if k not in survivors]
                for k in stopped:
                    array.members[k].stopped = True
                if out:
                    _write_models(out, array, stopped)
                array = array.keep(survivors, build_model, device, options)
        if max_steps and steps >= max_steps:
            break
    if out:
        _write_models(out, array, range(len(array.members)))


def _write_models(out, array, positions):
    """The current state of the array's models at `positions`, each as if trained alone."""
    from colo.fuse import unfuse
    for k in positions:
        m, state = array.members[k], unfuse(array.fused, k)
        directory = os.path.join(out, f"model-{m.index}")
        os.makedirs(directory, exist_ok=True)
        torch.save(state, os.path.join(directory, "state.pt"))
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump({"values": m.values, "optimizer": m.optimizer, "model_args": m.model_args, "seed": m.seed},
                      f, indent=2)
