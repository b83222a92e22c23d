"""colo.estimate: the peak GPU memory of training your own nn.Module.

    import colo, torchvision
    e = colo.estimate(torchvision.models.resnet50(), torch.randn(1, 3, 224, 224),
                      batch_size=128, optimizer="sgd")
    print(e)            # peak bytes as nvidia-smi shows the training process, with a breakdown

The same analytical estimator as `colo estimate`: the model's autograd graph
is recorded on the CPU at two small batches, each tensor's size fitted as
affine in the batch, and three training steps (forward, backward, optimiser)
plus an optional evaluation pass replayed through a model of PyTorch's CUDA
caching allocator, with cuDNN workspaces per convolution and the CUDA
context of colo's reference GPU (an H100).
"""
from dataclasses import dataclass, field

import contextlib
import functools
import weakref

import torch
import torch.nn.functional as F

from colo.ops_as_on_gpu import (attention_as_on_gpu, autocast_as_on_gpu, cpu_autocast_float16, cpu_runs_float16,
                                dropout_as_on_gpu, float16_recorded_as)

_OPTIMIZERS = {"sgd", "adam", "adamw"}


@dataclass
class Estimate:
    """What colo.estimate found. Sizes in bytes."""

    bytes: int                      # peak footprint of the training process (CUDA context included)
    breakdown: dict                 # parameters, gradients, optimizer, activations, data, workspace, context
    peak_phase: str                 # forward, backward, optimizer or evaluation
    unmodelled_ops: list = field(default_factory=list)  # autograd ops colo has no rule for
    rule: str = ""                  # what was assumed for them
    parameter_count: int = 0
    uncertainty: int = 0            # one-sided: the truth is expected below bytes + uncertainty
    learned_bytes: int = None       # colo's learned estimator on the same model, when asked for
    gpu: str = "h100"               # the GPU profile it is for (colo gpus --profile; "h100" built in)

    @property
    def gib(self):
        return self.bytes / 2**30

    @property
    def bytes_high(self):
        """bytes + uncertainty: the bound the truth is expected below, which
        colo's scheduler places a job by (a point estimate may err low)."""
        return self.bytes + self.uncertainty

    def __str__(self):
        parts = ", ".join(f"{k} {v / 2**20:.0f} MiB" for k, v in self.breakdown.items())
        text = f"{self.gib:.2f} GiB at the peak (in {self.peak_phase}): {parts}"
        if self.unmodelled_ops:
            text += f"; {self.rule}: {', '.join(self.unmodelled_ops)}"
        return text


def _default_optimizer_implementation():
    """How this torch runs torch.optim's step on CUDA when the optimiser does
    not say: torch 2 runs every parameter at once (foreach), torch 1 one by one."""
    return "foreach" if int(torch.__version__.split(".")[0]) >= 2 else "single"


def _optimizer_fields(optimizer):
    """(name, momentum, weight_decay, nesterov, implementation) of a name or a
    torch.optim instance; implementation is "single", "foreach" or "fused"."""
    if isinstance(optimizer, str):
        name = optimizer.lower()
        if name not in _OPTIMIZERS:
            raise ValueError(f"colo.estimate: optimizer must be one of {sorted(_OPTIMIZERS)} "
                             f"or a torch.optim instance, got {optimizer!r}")
        return name, (0.9 if name == "sgd" else 0.0), 0.0, False, _default_optimizer_implementation()
    if isinstance(optimizer, torch.optim.Optimizer):
        group = optimizer.param_groups[0]
        kind = type(optimizer).__name__.lower()
        if kind not in _OPTIMIZERS:
            raise ValueError(f"colo.estimate: optimizer {type(optimizer).__name__} is not modelled "
                             f"(known: SGD, Adam, AdamW)")
        foreach = group.get("foreach")
        implementation = ("fused" if group.get("fused") else
                          _default_optimizer_implementation() if foreach is None else
                          ("foreach" if foreach else "single"))
        return (kind, float(group.get("momentum", 0.0)), float(group.get("weight_decay", 0.0)),
                bool(group.get("nesterov", False)), implementation)
    raise TypeError(f"colo.estimate: optimizer must be a name or a torch.optim.Optimizer, "
                    f"got {type(optimizer).__name__}")


def _as_tuple(example_inputs):
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (tuple, list)) and example_inputs and \
            all(isinstance(t, torch.Tensor) for t in example_inputs):
        return tuple(example_inputs)
    raise TypeError("colo.estimate: example_inputs must be a tensor or a tuple of tensors, "
                    "each with the batch as its first dimension")


def _logits_of(output):
    """The tensor a default loss reads from a model's output."""
    if isinstance(output, torch.Tensor):
        return output
    logits = getattr(output, "logits", None)  # Hugging Face ModelOutput
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(output, dict):
        output = list(output.values())
    if isinstance(output, (tuple, list)):
        for item in output:
            if isinstance(item, torch.Tensor):
                return item
    raise TypeError(f"colo.estimate: the model returned {type(output).__name__}, with no tensor for the "
                    "default loss; pass loss=callable(output) -> scalar tensor")


def cross_entropy_loss(output):
    """The default loss: cross entropy of the output (batch, ..., classes) against class 0."""
    logits = _logits_of(output)
    if logits.dim() < 2:
        raise ValueError(f"colo.estimate: the default loss needs an output shaped (batch, ..., classes), "
                         f"got {tuple(logits.shape)}; pass loss=callable(output) -> scalar tensor")
    logits = logits.reshape(-1, logits.shape[-1])
    return F.cross_entropy(logits, torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device))


def _keeps_model_buffers(estimate_fn):
    """`estimate_fn(model, ...)` that leaves the model's buffers as they were:
    the training-mode forwards colo runs on random samples would otherwise
    move BatchNorm's running statistics and num_batches_tracked (a
    pretrained model's statistics drifting)."""
    @functools.wraps(estimate_fn)
    def keeping(model, *args, **kwargs):
        kept = [(b, b.detach().clone()) for b in model.buffers()] if isinstance(model, torch.nn.Module) else []
        try:
            return estimate_fn(model, *args, **kwargs)
        finally:
            with torch.no_grad():
                for buffer, value in kept:
                    buffer.copy_(value)
    return keeping


@_keeps_model_buffers
def estimate(model, example_inputs, batch_size=None, optimizer="adam", loss=None, evaluation=False,
             eval_batch_size=None, autocast=None, learned=None, keep_output=True, threads=2,
             set_to_none=True, accumulation_steps=1, gpu=None, zero_grad=None):
    """Peak GPU memory of training `model` with `optimizer` at `batch_size`.

    model           an nn.Module (moved to nothing: it is run on the CPU, unchanged)
    example_inputs  a tensor or a tuple of tensors, each with the batch first, as
                    model(*example_inputs) takes them; a batch of one is enough
    batch_size      the training batch (default: the examples' batch)
    optimizer       "sgd" (momentum 0.9), "adam", "adamw", or a torch.optim instance
                    whose class and first parameter group say the rest
    loss            callable(output) -> scalar tensor; default cross entropy of the
                    output (or its .logits) against class 0 at every position
    evaluation      also replay a no-grad evaluation pass after training
    eval_batch_size its batch (default: batch_size)
    autocast        None, or "bf16"/"fp16": record under torch.autocast, as a trainer
                    using autocast runs (CPU autocast's op list stands in for CUDA's,
                    with CUDA's float32 layer_norm, group_norm, softmax, log_softmax)
    keep_output     whether the training loop holds the model's output through
                    backward, as `out = model(x); loss = f(out)` does (True);
                    False for `loss = f(model(x))`, which lets it go before
                    backward (for a language model, the logits: batch x tokens x vocab)
    learned         path of a learned-estimator file (bench/results/estimate/learned.pt):
                    its estimate of the same model goes into Estimate.learned_bytes
    threads         CPU threads the estimate may use (torch's intra-op threads while
                    it runs, restored after), so that several run at once side by side
    set_to_none     as the loop's optimizer.zero_grad(set_to_none=...): False keeps
                    every gradient allocated from the first backward on (the
                    default of torch 1.x's zero_grad(); 2.x's is True)
    accumulation_steps  micro-batches whose gradients add up before each optimiser
                    step (batch_size is one micro-batch): above 1, the gradients
                    stay allocated through every forward and backward, as with
                    set_to_none=False
    zero_grad       where the loop calls optimizer.zero_grad(): "before_forward" (or
                    after the optimiser step, the same: plain PyTorch loops, the
                    Hugging Face Trainer), so the forward runs without last step's
                    gradients; "after_forward" (Lightning's closure, colo's trainer),
                    so they are still allocated through it. None: "after_forward"
                    for a LightningModule or a colo.fuse array (colo.fuse.Trainer's
                    order), else "before_forward"
    gpu             the GPU it is for, by the short name `colo gpus --profile`
                    stored its profile under ("h200"); None: this machine's GPU
                    when its profile is stored, else colo's reference GPU (an
                    H100, built in as "h100")

    Returns an Estimate. Raises ValueError/TypeError for bad arguments (a
    model with tensors on the meta device or a GPU among them: colo runs one
    training step on the CPU), RuntimeError naming the cause when the forward
    needs a GPU (the model's error chained), ValueError naming `colo gpus
    --profile` for a `gpu` with no stored profile, and the model's own exception
    when its forward or loss fails otherwise.
    """
    from colo import _core  # the compiled core; import errors name the build

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"colo.estimate: model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"colo.estimate: threads must be a positive int, got {threads!r}")
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return _estimate(model, example_inputs, batch_size, optimizer, loss, evaluation, eval_batch_size, autocast,
                         learned, keep_output, _keeps_gradients(set_to_none, accumulation_steps),
                         _zero_grad_before_forward(zero_grad, model), _profile_name(gpu, _core), _core,
                         set_to_none=set_to_none, accumulation_steps=accumulation_steps)
    finally:
        torch.set_num_threads(before)


def _profile_name(gpu, core):
    """The stored GPU profile the estimate uses: `gpu` itself, checked; for
    None this machine's GPU's when one is stored, else "" (the reference GPU's,
    built in)."""
    if gpu is None:
        if torch.cuda.is_available():
            key = core.profile_key(torch.cuda.get_device_name(torch.cuda.current_device()))
            if core.device_profile_stored(key):
                return key
        return ""
    if not isinstance(gpu, str):
        raise TypeError(f"colo.estimate: gpu must be a GPU's short name such as 'h200', got {type(gpu).__name__}")
    try:
        core.device_profile_name(gpu)  # reads it: a missing or malformed profile raises
    except (RuntimeError, ValueError) as exc:
        raise ValueError(f"colo.estimate: {exc}") from None
    return gpu


def _keeps_gradients(set_to_none, accumulation_steps):
    """Whether the loop keeps its gradients allocated between backward
    passes; raises ValueError for arguments of the wrong kind."""
    if not isinstance(set_to_none, bool):
        raise ValueError(f"colo.estimate: set_to_none must be True or False, got {set_to_none!r}")
    if not isinstance(accumulation_steps, int) or isinstance(accumulation_steps, bool) or accumulation_steps < 1:
        raise ValueError(f"colo.estimate: accumulation_steps must be a positive int, got {accumulation_steps!r}")
    return not set_to_none or accumulation_steps > 1


def _zero_grad_before_forward(zero_grad, model):
    """Whether the loop frees last step's gradients before the forward (see
    estimate's `zero_grad`); raises ValueError for another value."""
    if zero_grad is None:
        lightning = any(c.__module__.split(".")[0] in ("lightning", "pytorch_lightning") for c in type(model).__mro__)
        fused = hasattr(model, "colo_state_prefix")  # a colo.fuse array: colo.fuse.Trainer zeroes after its forward
        return not (lightning or fused)
    if zero_grad not in ("before_forward", "after_forward"):
        raise ValueError(f"colo.estimate: zero_grad must be 'before_forward' or 'after_forward', got {zero_grad!r}")
    return zero_grad == "before_forward"


def _estimate(model, example_inputs, batch_size, optimizer, loss, evaluation, eval_batch_size, autocast, learned,
              keep_output, keeps_gradients, zero_grad_before_forward, gpu, _core, set_to_none=True,
              accumulation_steps=1):
    """estimate()'s work, its arguments' types checked. `keeps_gradients`:
    whether gradients are allocated through a forward (no set_to_none, or a
    later micro-batch); the replay takes set_to_none and the micro-batches
    themselves."""
    examples = _as_tuple(example_inputs)
    if any(t.dim() < 1 or t.shape[0] < 1 for t in examples):
        raise ValueError("colo.estimate: every example input needs a batch dimension with at least one sample")
    if batch_size is None:
        batch_size = int(examples[0].shape[0])
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"colo.estimate: batch_size must be a positive int, got {batch_size!r}")
    if eval_batch_size is not None and (not isinstance(eval_batch_size, int) or isinstance(eval_batch_size, bool)
                                        or eval_batch_size < 1):
        raise ValueError(f"colo.estimate: eval_batch_size must be a positive int, got {eval_batch_size!r}")
    if autocast not in (None, "bf16", "fp16"):
        raise ValueError(f"colo.estimate: autocast must be None, 'bf16' or 'fp16', got {autocast!r}")
    name, momentum, weight_decay, nesterov, implementation = _optimizer_fields(optimizer)
    _require_cpu_tensors(model)
    loss_of_output = loss or cross_entropy_loss
    was_training = model.training
    # A CPU that cannot run float16 (torch 1.13's) records it as bfloat16:
    # the same two bytes an element, so the same sizes, saved tensors and
    # allocations; the model is given back in float16.
    fp16_as = torch.float16 if cpu_runs_float16() else torch.bfloat16
    examples = tuple(t.to(fp16_as) if t.dtype == torch.float16 else t for t in examples)
    first = examples[0]
    tokens = not first.is_floating_point()
    vocab = int(first.max().item()) + 1 if tokens and first.numel() else 0

    def batch_of(x):
        # The recorded batch: the first input is colo's synthetic batch (its
        # size is what matters); the others repeat the examples to that size.
        b = x.shape[0]
        rest = tuple(t[:1].expand(b, *t.shape[1:]).contiguous() for t in examples[1:])
        return (x.to(first.dtype),) + rest

    # Whether a recorded training step's graph reached every trainable
    # parameter: then none is beyond it (no reentrant checkpoint), and the
    # extra forward and backward that would find them is not needed.
    graph_reaches_all = []

    def step_loss(x, _labels):
        if autocast is None:
            out = model(*batch_of(x))
            value = loss_of_output(out)
        else:
            dtype = torch.bfloat16 if autocast == "bf16" else cpu_autocast_float16()
            with autocast_as_on_gpu(dtype):
                out = model(*batch_of(x))
                value = loss_of_output(out)
        if not isinstance(value, torch.Tensor) or value.numel() != 1:
            raise ValueError("colo.estimate: the loss must be a scalar tensor")
        if model.training and value.grad_fn is not None and not graph_reaches_all:
            reached = _parameters_reached(value)
            graph_reaches_all.append(all(id(p) in reached for p in model.parameters() if p.requires_grad))
        return value.float() if value.dtype != torch.float32 else value

    try:
        with attention_as_on_gpu(), float16_recorded_as(model, fp16_as), _gpu_only_named(), \
                _non_reentrant_checkpoints_noted(_core), _checkpoints_run_plain(_core), \
                _in_place_ops_noted(_core), _outputs_outside_autograd_watched(model) as outside_autograd, \
                _first_layer_watched(model, first) as first_layer:
            found = _core.estimate_model(
                set_mode=lambda training: model.train(training), loss=step_loss,
                sample_shape=list(first.shape[1:]), tokens=tokens, vocab=vocab, batch_size=batch_size,
                eval_batch_size=(eval_batch_size or batch_size) if evaluation else 0,
                optimizer=name, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov,
                keeps_output=bool(keep_output), keeps_gradients=not set_to_none, learned=str(learned or ""),
                gpu=gpu, optimizer_implementation=implementation, zero_grad_before_forward=zero_grad_before_forward,
                accumulation_steps=accumulation_steps, resident_allocations=_resident_allocations(model))
    finally:
        model.train(was_training)
    breakdown = dict(found["breakdown"])
    # The replay allocated every block of model.to("cuda") in its order
    # (_resident_allocations): the trainable parameters the recorded graph
    # reaches, and the frozen ones (a frozen backbone, an adapter's base
    # model), unused ones and buffers (BatchNorm statistics, masks). What
    # is left unseen is autocast's low-precision copies.
    unseen = max(0, _resident_model_bytes(model) + _low_precision_copy_bytes(model, autocast)
                 - breakdown["parameters"])
    breakdown["parameters"] += unseen
    # The replay holds the first input's batch as the data; the other inputs
    # (a second tensor, a mask, token ids beside images) are on the GPU too.
    batch = (eval_batch_size or batch_size) if found["peak_phase"] == "evaluation" else batch_size
    other_inputs = sum(_allocator_bytes(t[:1].numel() * t.element_size() * batch)
                       for t in examples[1:])
    breakdown["data"] += other_inputs
    unseen += other_inputs
    # The replay holds the first input at 4 bytes an element (8 for token
    # ids); a bf16 or fp16 batch takes its own element size.
    if not tokens and first.element_size() != 4:
        per_sample = first[:1].numel()
        resized = (_allocator_bytes(per_sample * first.element_size() * batch)
                   - _allocator_bytes(per_sample * 4 * batch))
        breakdown["data"] += resized
        unseen += resized
    # Under autocast a float32 batch's first convolution or linear layer
    # runs on a bf16/fp16 copy of it; with a trainable weight it keeps that
    # copy for the weight's gradient, to the end of the backward. The
    # recorded graph does not see it: the copy needs no gradient.
    if (autocast is not None and not tokens and first.dtype == torch.float32 and first_layer[0]
            and found["peak_phase"] in ("forward", "backward")):
        cast = _allocator_bytes(first[:1].numel() * 2 * batch)
        breakdown["data"] += cast
        unseen += cast
    # Layers outside autograd (a frozen backbone, a torch.no_grad() block)
    # save nothing for backward, so the recorded graph does not see them; but
    # while the forward runs through them, what the model's code still holds
    # (a residual's input, a block's output while its shortcut runs) is on the
    # GPU beside the layer's input and output, the model and the optimiser's
    # state. The forward is run once on two samples with every tensor's life
    # followed, and replayed as a fresh process's first two forwards
    # (_second_step_peaks).
    two = batch_of(first[:1].expand(2, *first.shape[1:]).contiguous())  # the data, counted above

    def two_sample_forward():
        if autocast is None:
            return model(*two)
        with autocast_as_on_gpu(torch.bfloat16 if autocast == "bf16" else cpu_autocast_float16()):
            return model(*two)

    untracked = 0
    if outside_autograd[0]:  # else the recorded graph holds the whole forward
        with attention_as_on_gpu(), dropout_as_on_gpu(), float16_recorded_as(model, fp16_as):
            _, untracked = _forward_live_peak(model, two_sample_forward, batch_size, two, _core, gpu)
    if untracked:
        # Beside the forward's own tensors the job holds its model, the optimiser's state, the
        # data and the CUDA libraries' workspaces (cuBLAS's among them, which the forward's
        # peak leaves out). The replay's workspace is what its own peak held (a backward
        # convolution's cuDNN workspace, the allocator's free blocks then): the forward's
        # peak has its convolutions' workspaces and its blocks in `untracked` already.
        held = ("parameters", "optimizer", "data", "context") + (("gradients",) if keeps_gradients else ())
        libraries = _core.library_workspace(gpu)
        at_forward = sum(breakdown[k] for k in held) + libraries
        if at_forward + untracked > found["bytes"] + unseen:
            unseen = at_forward + untracked - found["bytes"]
            breakdown["activations"], breakdown["workspace"] = untracked, libraries
            if not keeps_gradients:
                breakdown["gradients"] = 0
            found = dict(found, peak_phase="forward")
    # Parameters whose gradients backward computes beyond the recorded
    # graph (those inside a reentrant checkpoint other than torch's, which
    # the recording runs as plain code: reached only when its backward reruns
    # the segment) have gradients and optimizer state on the GPU as the
    # others do.
    hidden = []
    if graph_reaches_all != [True]:
        with float16_recorded_as(model, fp16_as):
            hidden = _parameters_beyond_the_graph(model, lambda: step_loss(
                first[:1].expand(2, *first.shape[1:]).contiguous(), None))
    if hidden:
        grads = sum(_allocator_bytes(p.numel() * p.element_size()) for p in hidden)
        state = grads * (2 if name != "sgd" else (1 if momentum > 0 else 0))
        if breakdown["gradients"] == 0:
            grads = 0  # freed at the peak, as the graph's own are
        breakdown["gradients"] += grads
        breakdown["optimizer"] += state
        unseen += grads + state
    # Adam(amsgrad=True) keeps a third buffer per trainable parameter: the
    # largest second moment seen.
    if isinstance(optimizer, torch.optim.Optimizer) and optimizer.param_groups[0].get("amsgrad", False):
        trainable = [p for p in model.parameters() if p.requires_grad]
        most = sum(_allocator_bytes(p.numel() * p.element_size()) for p in trainable)
        breakdown["optimizer"] += most
        unseen += most
    total = found["bytes"] + unseen
    uncertainty = found["uncertainty"] + unseen // 10
    rule = "assumed to keep their inputs and outputs for backward" if found["unmodelled_ops"] else ""
    return Estimate(bytes=total, breakdown=breakdown, peak_phase=found["peak_phase"],
                    unmodelled_ops=found["unmodelled_ops"], rule=rule, parameter_count=found["parameter_count"],
                    uncertainty=uncertainty, learned_bytes=found.get("learned_bytes"), gpu=gpu or "h100")


def _require_cpu_tensors(model):
    """Raises ValueError, saying what to do, when a parameter or buffer is not
    on the CPU: colo runs one training step there with real weights (a model
    built on the meta device, too big for the CPU's memory, cannot be)."""
    elsewhere = [(n, t.device) for n, t in list(model.named_parameters()) + list(model.named_buffers())
                 if t.device.type != "cpu"]
    if not elsewhere:
        return
    name, device = elsewhere[0]
    if device.type == "meta":
        raise ValueError(f"colo.estimate: {len(elsewhere)} of the model's tensors are on the meta device (e.g. "
                         f"{name!r}); colo runs one training step on the CPU and needs real weights: build the model on "
                         "the CPU (it must fit in the CPU's memory), or give the job's memory by hand (mem = ...)")
    raise ValueError(f"colo.estimate: {len(elsewhere)} of the model's tensors are on {device} (e.g. {name!r}); colo "
                     "runs one training step on the CPU: pass the model before .to(device), or model.cpu()")


class _gpu_only_named:
    """Within it, a forward or loss that fails because it needs CUDA (it moves
    tensors to the GPU, or calls a GPU-only op) raises colo's RuntimeError
    saying so, the model's own exception chained."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, _traceback):
        if error is None or not isinstance(error, (RuntimeError, AssertionError, NotImplementedError)):
            return False
        text = str(error)
        if "cuda" not in text.lower() and "nvidia" not in text.lower():
            return False
        raise RuntimeError(f"colo.estimate: the model's forward needs a GPU ({type(error).__name__}: "
                           f"{text.splitlines()[0] if text else ''}); colo runs one training step on the CPU, so its "
                           "forward must run there: use its inputs' device instead of 'cuda', or give the job's "
                           "memory by hand (mem = ...)") from error


@contextlib.contextmanager
def _non_reentrant_checkpoints_noted(core):
    """Within it, each torch.utils.checkpoint(use_reentrant=False) that runs
    tells `core` the autograd nodes it made (their sequence numbers), so that
    the recorded step lets go of what they save and recomputes it in
    backward, as the checkpoint does. Patches the checkpoint's module-level
    worker, which checkpoint() looks up at every call, however the model
    imported `checkpoint`."""
    import torch.utils.checkpoint as checkpointing

    name = ("_checkpoint_without_reentrant_generator"
            if hasattr(checkpointing, "_checkpoint_without_reentrant_generator")
            else "_checkpoint_without_reentrant")
    original = getattr(checkpointing, name, None)
    if original is None:
        yield
        return
    if name.endswith("_generator"):  # torch 2.x: set-up, yield, the segment runs, tear-down
        def noted(*args, **kwargs):
            first = core.next_sequence_number()
            yield from original(*args, **kwargs)
            core.note_recomputed_region(first, core.next_sequence_number())
    else:  # torch 1.13: runs the segment itself
        def noted(*args, **kwargs):
            first = core.next_sequence_number()
            result = original(*args, **kwargs)
            core.note_recomputed_region(first, core.next_sequence_number())
            return result
    setattr(checkpointing, name, noted)
    try:
        yield
    finally:
        setattr(checkpointing, name, original)


@contextlib.contextmanager
def _on_leaf_modules(model, hook, before=False):
    """Within it, `hook` runs at every call of each of the model's leaf
    modules: before the call (a forward pre-hook) when `before`, else after."""
    hooks = [(m.register_forward_pre_hook if before else m.register_forward_hook)(hook)
             for m in model.modules() if not list(m.children())]
    try:
        yield
    finally:
        for handle in hooks:
            handle.remove()


@contextlib.contextmanager
def _outputs_outside_autograd_watched(model):
    """Yields a list whose only item turns True when, with the model in
    training mode, one of its leaf modules gives a floating-point output
    that autograd does not follow (a frozen layer, a torch.no_grad() block):
    what _forward_live_peak looks for, seen during the recording."""
    seen = [False]

    def watch(_module, _inputs, output):
        outputs = output if isinstance(output, (tuple, list)) else (output,)
        if model.training and any(isinstance(t, torch.Tensor) and t.is_floating_point() and not t.requires_grad
                                  for t in outputs):
            seen[0] = True

    with _on_leaf_modules(model, watch):
        yield seen


_CASTING_LAYERS = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.Linear)


@contextlib.contextmanager
def _first_layer_watched(model, first):
    """Yields a list whose only item turns True when, with the model in
    training mode, the first leaf module called takes the batch (a float
    tensor without a gradient, shaped as `first`'s samples) and is a
    convolution or linear layer with a trainable weight: one that autocast
    runs on a low-precision copy of the batch, which it keeps for backward."""
    found = [False]
    called = [False]

    def watch(module, inputs):
        if called[0] or not model.training:
            return
        called[0] = True
        x = inputs[0] if inputs else None
        found[0] = (isinstance(module, _CASTING_LAYERS) and module.weight.requires_grad
                    and isinstance(x, torch.Tensor) and x.is_floating_point() and not x.requires_grad
                    and tuple(x.shape[1:]) == tuple(first.shape[1:]))

    with _on_leaf_modules(model, watch, before=True):
        yield found


_IN_PLACE_OPERATORS = {"__iadd__", "__isub__", "__imul__", "__itruediv__"}


@contextlib.contextmanager
def _in_place_ops_noted(core):
    """Within it, each in-place op on a tensor autograd follows (x.relu_(),
    x += y, nn.ReLU(inplace=True)) tells `core` the node it made, so that the
    recorded step gives its result the input's memory instead of new memory,
    as the GPU does. Seen as the op's result being its first argument."""
    from torch.overrides import TorchFunctionMode

    class Noted(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            result = func(*args, **kwargs)
            name = getattr(func, "__name__", "")
            in_place = ((name.endswith("_") and not name.endswith("__")) or name in _IN_PLACE_OPERATORS
                        or kwargs.get("inplace") is True)
            if (in_place and args and result is args[0] and isinstance(result, torch.Tensor)
                    and result.grad_fn is not None):
                core.note_in_place_node(core.next_sequence_number() - 1)
            return result

    with Noted():
        yield


class _checkpoints_run_plain:
    """Within it, torch.utils.checkpoint(use_reentrant=True) runs its
    segment as plain code under autograd (found at call time on the
    autograd Function, however the model imported `checkpoint`), and tells
    colo's `core` the autograd nodes it made, as a non-reentrant checkpoint
    does (_non_reentrant_checkpoints_noted): the recorded step then keeps the
    segment's inputs and recomputes what it saves when backward reaches it,
    which is what the reentrant kind does too (its backward reruns the
    segment's forward with autograd, then its backward)."""

    def __init__(self, core):
        self._core = core

    def __enter__(self):
        from torch.utils.checkpoint import CheckpointFunction
        core = self._core

        def plain(function, _preserve_rng_state, *args):
            first = core.next_sequence_number()
            result = function(*args)
            core.note_recomputed_region(first, core.next_sequence_number())
            return result

        self._own_apply = CheckpointFunction.__dict__.get("apply")  # else inherited from autograd.Function
        CheckpointFunction.apply = staticmethod(plain)
        return self

    def __exit__(self, *exc):
        from torch.utils.checkpoint import CheckpointFunction
        if self._own_apply is None:
            del CheckpointFunction.apply
        else:
            CheckpointFunction.apply = self._own_apply
        return False


def _parameters_reached(value):
    """The ids of the tensors whose gradient accumulators the autograd
    graph from `value` reaches: the trainable parameters its backward fills."""
    reached, seen, frontier = set(), set(), [value.grad_fn]
    while frontier:
        node = frontier.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # AccumulateGrad
        if variable is not None:
            reached.add(id(variable))
        frontier.extend(next_node for next_node, _ in node.next_functions)
    return reached


def _parameters_beyond_the_graph(model, loss_of_two_samples):
    """Trainable parameters that a backward of the loss gives a gradient but
    that the autograd graph from the loss does not reach (no gradient
    accumulator of theirs in it): those inside a reentrant checkpoint. Runs
    one forward and backward on two samples in training mode; every
    parameter's .grad is given back as it was."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    was_training = model.training
    grads = [p.grad for p in trainable]
    try:
        model.train(True)
        with torch.enable_grad():
            value = loss_of_two_samples()
        reached = _parameters_reached(value)
        if all(id(p) in reached for p in trainable):
            return []
        for p in trainable:
            p.grad = None
        value.backward()
        return [p for p in trainable if p.grad is not None and id(p) not in reached]
    finally:
        model.train(was_training)
        for p, grad in zip(trainable, grads):
            p.grad = grad


def _storage_of(t):
    """(address, bytes) of the memory under tensor `t`, shared by its views."""
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return storage.data_ptr(), storage.nbytes()


def _forward_live_peak(model, forward, batch_size, inputs, core, gpu):
    """(allocated, reserved): the most bytes the CUDA caching allocator has
    allocated, and holds (reserved, as colo's model of it in `core` gives),
    for the tensors alive while `forward()` (a
    training forward of the model on two samples) runs, each scaled to
    `batch_size`: blocks freed in one size that later tensors of another
    cannot reuse count too. The model's parameters and buffers and the
    `inputs` are left out (counted elsewhere). Every tensor
    an op makes is followed until the last tensor sharing its memory dies,
    so what the model's code holds (a residual, autograd's saved tensors)
    counts as long as it is held; a 2-d convolution also takes cuDNN's forward
    workspace for a moment after its output. Only tensors made from the batch grow
    with it: an op's output is scaled when one of its inputs came from the
    batch, not when all came from the model (autocast's copies of weights).
    (0, 0) when every layer's output is in the autograd graph: the recorded
    graph then holds the whole forward."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    _CONVOLUTION = torch.ops.aten.convolution.default
    matrix_products = {torch.ops.aten.addmm.default, torch.ops.aten.mm.default, torch.ops.aten.bmm.default,
                       torch.ops.aten.baddbmm.default}
    gemm_workspace = core.gemm_workspace(gpu)
    first_gemm = []  # the allocation id of cuBLAS's workspace, taken at the forward's first matrix product
    counted = {_storage_of(t)[0] for t in list(model.parameters()) + list(model.buffers()) + list(inputs)}
    from_batch = {_storage_of(t)[0] for t in inputs}
    live = {}  # address -> [bytes at batch_size, tensors alive over it, allocation id]
    events = []  # (allocation id, bytes) allocates, (allocation id, 0) frees

    def release(address):
        entry = live.get(address)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            events.append((entry[2], 0))
            del live[address]
            from_batch.discard(address)

    class Follow(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            scaled = any(_storage_of(t)[0] in from_batch for t in tree_flatten((args, kwargs or {}))[0]
                         if isinstance(t, torch.Tensor) and t.device.type != "meta")
            for t in (out if isinstance(out, (tuple, list)) else (out,)):
                if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                    continue
                address, nbytes = _storage_of(t)
                if address in counted or nbytes == 0:
                    continue
                if scaled:
                    from_batch.add(address)
                if address not in live:
                    live[address] = [nbytes * batch_size // 2 if scaled else nbytes, 0, len(events)]
                    events.append((len(events), live[address][0]))
                live[address][1] += 1
                weakref.finalize(t, release, address)
            if func == _CONVOLUTION and scaled:
                # cuDNN's forward workspace, taken and given back after the output.
                weight, result = args[1], out
                workspace = core.conv_forward_workspace(list(args[0].shape), list(weight.shape), list(result.shape),
                                                        batch_size, result.element_size(), gpu)
                if workspace:
                    events.append((len(events), workspace))
                    events.append((events[-1][0], 0))
            if func in matrix_products and not first_gemm and gemm_workspace:
                first_gemm.append(len(events))
                events.append((len(events), gemm_workspace))
            return out

    was_training = model.training
    try:
        model.train(True)
        with torch.enable_grad(), _outputs_outside_autograd_watched(model) as outside_autograd, Follow():
            forward()
    finally:
        model.train(was_training)
    if not outside_autograd[0]:
        return (0, 0)
    if not first_gemm:
        return core.allocator_peaks(events)
    return _second_step_peaks(events, first_gemm[0], gemm_workspace, core)


def _second_step_peaks(events, forward_workspace, workspace_bytes, core):
    """(allocated, reserved) peaks of a fresh process's first two forwards,
    given the first's allocation `events` (as _forward_live_peak makes them),
    less cuBLAS's two workspaces (counted with the library's). A fresh
    process takes a cuBLAS workspace of `workspace_bytes` at the forward's
    first matrix product (allocation id `forward_workspace`, a head after a
    frozen backbone) and another at backward's, and keeps both: they land in
    blocks the first forward freed and split them, so the second forward's
    large tensors can need new segments. Seen on an H100: a frozen ResNet-18
    at batch 128 reserved 1466 MiB in a fresh process, 1258 MiB warm."""
    live = set()
    for allocation, nbytes in events:
        if nbytes:
            live.add(allocation)
        else:
            live.discard(allocation)
    backward_workspace = len(events)
    offset = backward_workspace + 1
    two_steps = list(events) + [(backward_workspace, workspace_bytes)]
    two_steps += [(allocation, 0) for allocation in sorted(live - {forward_workspace})]
    two_steps += [(allocation + offset, nbytes) for allocation, nbytes in events if allocation != forward_workspace]
    allocated, reserved = core.allocator_peaks(two_steps)
    return allocated - 2 * workspace_bytes, reserved - 2 * workspace_bytes


def _allocator_bytes(nbytes):
    """What the CUDA caching allocator takes for a tensor of `nbytes`: whole
    512-byte blocks, one at least (CachingAllocatorModel::rounded_size)."""
    return max(512, (nbytes + 511) // 512 * 512)


def _low_precision_copy_bytes(model, autocast):
    """Under autocast, the copies in its precision that a fused array's shared
    frozen layers keep of their float32 weights (colo.fuse.frozen.CastOnce),
    each rounded to the allocator's blocks; 0 without autocast."""
    if autocast is None:
        return 0
    from colo.fuse.frozen import CastOnce, PaddedLinear

    total = 0
    for layer in model.modules():
        if not isinstance(layer, CastOnce):
            continue
        weight, bias = ((layer.padded_weight, layer.padded_bias) if isinstance(layer, PaddedLinear)
                        else (layer.weight, layer.bias))
        if weight.requires_grad or weight.dtype != torch.float32:
            continue
        for t in (weight, bias):
            if t is not None and t.dtype == torch.float32:
                total += _allocator_bytes(t.numel() * 2)
    return total


def _resident_allocations(model):
    """Bytes of each allocation model.to("cuda") makes, in its order
    (torch.nn.Module._apply: a module's children first, then its own
    parameters, then its buffers), each in the CUDA caching allocator's
    512-byte blocks; a tensor met again (a tied weight) and an empty one make
    none. On an H200 this is the real process's own sequence, block for
    block (torchvision ResNet-18/50, MobileNetV2, RegNetY, ConvNeXt)."""
    sizes, seen = [], set()

    def visit(module):
        for child in module.children():
            visit(child)
        for t in list(module._parameters.values()) + list(module._buffers.values()):
            if t is None or id(t) in seen:
                continue
            seen.add(id(t))
            if t.numel() > 0:
                sizes.append(_allocator_bytes(t.numel() * t.element_size()))

    visit(model)
    return sizes


def _resident_model_bytes(model):
    """Bytes of every parameter and buffer of the model on the GPU
    (_resident_allocations, summed)."""
    return sum(_resident_allocations(model))
