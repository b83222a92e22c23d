"""colo.fuse: train N copies of your own PyTorch model as one fused array.

    fused = colo.fuse.fuse(lambda: MyNet(), 8)          # one module, 8 models
    opt = colo.fuse.optimizer(fused, "sgd", lr=[0.1, 0.05, ...], momentum=0.9)
    trainer = colo.fuse.Trainer(fused, opt, torch.nn.functional.cross_entropy)
    losses = trainer.step(images, labels)                # [8] per-model losses
    states = colo.fuse.unfuse(fused)                     # 8 state_dicts for MyNet

The model's forward is traced with torch.fx and rewritten: its layers become
colo's fused layers (one grouped convolution or batched GEMM for all models,
colo's CUDA kernels where they apply), elementwise functions and reshapes
pass through with the model axis accounted for, and anything colo.fuse does
not know is named in a FuseError. See docs/python.md.
"""
import dis
import inspect
import traceback

import torch
import torch.fx as fx

from colo.fuse.adapters import fusable_adapters, peft_adapter_state, unpad, unwrap_peft
from colo.fuse.autocast_inputs import share_autocast_casts
from colo.fuse.optim import FusedOptimizer, optimizer
from colo.fuse.rewrite import SUPPORTED_LAYERS, Rewriter, per_model_dropout_rates
from colo.fuse.stacking import FuseError, check_no_tied_parameters, per_model_state
from colo.fuse.sweep import configurations, sweep
from colo.fuse.trainer import Trainer, per_model_loss
from colo.fuse.workload import compare_workload

__all__ = ["FuseError", "FusedOptimizer", "SUPPORTED_LAYERS", "Trainer", "adapter_state", "compare_workload",
           "configurations", "fuse", "optimizer", "per_model_loss", "sweep", "unfuse"]


def _build(build_model, n):
    if isinstance(build_model, (list, tuple)):
        return list(build_model)
    if n is None or n < 1:
        raise FuseError("colo.fuse: give the number of models n >= 1, or a list of models")
    takes_index = False
    try:  # build_model(i) only when it has a required positional parameter
        takes_index = any(p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                          for p in inspect.signature(build_model).parameters.values())
    except (TypeError, ValueError):
        pass
    return [build_model(i) if takes_index else build_model() for i in range(n)]


def _check_alike(models):
    reference = {k: tuple(v.shape) for k, v in models[0].state_dict().items()}
    for i, model in enumerate(models[1:], start=1):
        shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
        if shapes != reference:
            diff = sorted(set(shapes.items()) ^ set(reference.items()))[:3]
            raise FuseError(f"colo.fuse: model {i} differs from model 0 in its parameters or buffers {diff}; "
                            "fused models share one architecture")


def _unpack_count(frame):
    """How many values the instruction running in `frame` unpacks, or None."""
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset >= frame.f_lasti:
            return instruction.argval if instruction.opname == "UNPACK_SEQUENCE" else None
    return None


def _iterate_proxy(proxy):
    frame = inspect.currentframe().f_back
    count = _unpack_count(frame) if frame is not None else None
    if count is not None:
        return iter(proxy[i] for i in range(count))
    return proxy.tracer.iter(proxy)  # fx's own error: a traced value cannot be iterated


_FX_ITER = fx.Proxy.__iter__


# Tensor factories whose C++ argument parsers reject a traced size
# (`torch.arange(x.size(1), device=x.device)`): while tracing they record a
# node instead, which the rewrite keeps plain (the same for every model).
_FACTORIES = ("arange", "zeros", "ones", "full", "empty", "eye", "linspace", "logspace", "rand", "randn",
              "randint", "tril_indices", "triu_indices")


def _has_proxy(values):
    found = []
    fx.node.map_aggregate(values, lambda v: found.append(v) if isinstance(v, fx.Proxy) else None)
    return found[0] if found else None


def _traceable(factory):
    def run(*args, **kwargs):
        proxy = _has_proxy((args, kwargs))
        if proxy is None:
            return factory(*args, **kwargs)
        return proxy.tracer.create_proxy("call_function", factory, args, kwargs)
    return run


def _user_line(error):
    """The last line of the model's own code in `error`'s traceback."""
    skip = (torch.__file__.rsplit("/", 1)[0], __file__.rsplit("/", 1)[0])
    lines = [f'File "{f.filename}", line {f.lineno}: {f.line}' for f in traceback.extract_tb(error.__traceback__)
             if not f.filename.startswith(skip)]
    return lines[-1] if lines else ""


class _Tracer(fx.Tracer):
    """fx's tracer, recording where each operation comes from. While it
    traces, a traced value can be unpacked (`n, c, h, w = x.shape`) on Python
    versions whose bytecode torch 1.13's fx does not recognise (3.11), and a
    traced size can be given to a tensor factory (torch.arange, torch.zeros, ...)."""

    def __init__(self):
        super().__init__()
        self.record_stack_traces = True

    def trace(self, root, concrete_args=None):
        """The traced graph; tensors the forward makes from constants
        (`torch.tensor([...])`, `torch.ones(3)`) are left in `self.constants`
        by name instead of on `root`."""
        fx.Proxy.__iter__ = _iterate_proxy
        originals = {name: getattr(torch, name) for name in _FACTORIES if hasattr(torch, name)}
        for name, factory in originals.items():
            setattr(torch, name, _traceable(factory))
        before = set(vars(root))
        self.constants = {}
        try:
            graph = super().trace(root, concrete_args)
            for name in set(vars(root)) - before:
                if name.startswith("_tensor_constant"):
                    self.constants[name] = getattr(root, name)
                    delattr(root, name)
            return graph
        except Exception as e:
            where = _user_line(e)
            raise FuseError(f"colo.fuse: torch.fx cannot trace {type(root).__name__}.forward"
                            + (f" at {where}" if where else "") + f": {type(e).__name__}: {e}") from e
        finally:
            fx.Proxy.__iter__ = _FX_ITER
            for name, factory in originals.items():
                setattr(torch, name, factory)


def fuse(build_model, n=None, *, own_kernels=True, channels_last=False, share_frozen=True):
    """One module that trains n models of one architecture.

    `build_model` is a function returning a new nn.Module (called n times,
    with the model's index if it takes an argument), or a list of modules.
    The models keep their own initial weights; their hyper-parameters go to
    colo.fuse.optimizer.

    Returns a torch.fx.GraphModule whose forward takes the single model's
    inputs (a batch shared by all models) and returns each output with the
    model axis first ([N, B, ...]); its parameters and buffers are the
    models' stacked on a first axis under the single model's names, and its
    `.models` is n. `own_kernels` lets convolutions use colo's CUDA kernels;
    `channels_last` runs 2-D convolutions in NHWC layout (cuDNN's grouped
    convolutions are faster so for wide layers, e.g. ResNets).

    With `share_frozen`, parameters that every model freezes
    (requires_grad=False) and that are equal in all of them, as after
    loading one pretrained checkpoint, are held once: a frozen prefix runs
    once per batch for all models, and a frozen layer on per-model values
    (a LoRA base projection) runs as one operation over all models' rows.
    In that shared part one dropout mask serves every model. Each layer
    keeps the training mode its model gave it. False stacks every parameter
    N times, frozen or not.

    peft models (get_peft_model) fuse with their LoRA layers: each adapter
    runs as one batched low-rank GEMM for all N, and adapters whose ranks
    differ are zero-padded to the largest (exact: the padding stays zero).
    unfuse gives peft's state_dict names; adapter_state gives what peft saves.
    Under torch.autocast an activation that several Linears read is cast
    once for all of them (colo.fuse.autocast_inputs).
    Raises FuseError naming the layer or operation it cannot fuse."""
    models = _build(build_model, n)
    for model in models:
        if not isinstance(model, torch.nn.Module):
            raise FuseError(f"colo.fuse: build_model returned {type(model).__name__}, not a torch.nn.Module")
    models, prefix = unwrap_peft(models)
    with fusable_adapters(models) as padded:
        fused = _fuse(models, own_kernels, channels_last, share_frozen)
    fused.colo_padded_adapters = padded
    fused.colo_state_prefix = prefix
    return fused


def _fuse(models, own_kernels, channels_last, share_frozen):
    """fuse() of models already built, unwrapped and with fusable adapters."""
    _check_alike(models)
    check_no_tied_parameters(models[0])
    modes = {path: layer.training for path, layer in models[0].named_modules()}
    tracer = _Tracer()
    traced = tracer.trace(models[0])
    others = []
    for model in models[1:]:  # each model's own forward, to find values that differ (Python attributes)
        other = _Tracer()
        others.append((other.trace(model), other.constants))
    rates = per_model_dropout_rates(traced, tracer.constants, others)
    rewriter = Rewriter(models, own_kernels=own_kernels, channels_last=channels_last, constants=tracer.constants,
                        dropout_rates=rates, share_frozen=share_frozen)
    root, graph, shared_state = rewriter.run(traced)
    fused = fx.GraphModule(root, graph, class_name="Fused" + type(models[0]).__name__)
    for name in rewriter.not_state:  # GraphModule made them buffers; they stay out of state_dict
        owner_path, _, leaf = name.rpartition(".")
        fused.get_submodule(owner_path)._non_persistent_buffers_set.add(leaf)
    fused.graph.eliminate_dead_code()  # e.g. a ReLU that a ReLU+max-pool kernel absorbed
    fused.recompile()
    share_autocast_casts(fused)
    _install_unused(fused, models)
    fused.models = len(models)
    fused.colo_shared_state = shared_state
    _keep_training_modes(fused, modes)
    return fused


def _keep_training_modes(fused, modes):
    """Every layer of `fused` in the training mode `modes` gives its path (the
    model's, before fusing: a frozen backbone in eval mode stays so); layers
    colo added follow the whole model."""
    fused.train(modes[""])
    for path, layer in fused.named_modules():
        layer.training = modes.get(path, modes[""])


def _install_unused(fused, models):
    """Parameters and buffers the forward never touches still travel with the
    fused module, so unfuse gives complete state_dicts."""
    present = set(fused.state_dict())
    for name, value in models[0].state_dict().items():
        if name in present:
            continue
        owner_path, _, leaf = name.rpartition(".")
        owner = fused
        for part in owner_path.split(".") if owner_path else []:
            if not hasattr(owner, part):
                owner.add_module(part, torch.nn.Module())
            owner = getattr(owner, part)
        owner.register_buffer(leaf, torch.stack([m.state_dict()[name] for m in models]))


def unfuse(fused, index=None):
    """Model `index`'s state_dict (or a list of all N), loadable into the
    original class with load_state_dict."""
    state = fused.state_dict()
    shared = getattr(fused, "colo_shared_state", set())
    padded = getattr(fused, "colo_padded_adapters", {})
    prefix = getattr(fused, "colo_state_prefix", "")

    def model_state(i):
        own = unpad(per_model_state(state, i, shared), padded, i)
        return {prefix + name: value for name, value in own.items()}
    if index is not None:
        if not 0 <= index < fused.models:
            raise IndexError(f"colo.unfuse: model {index} of {fused.models}")
        return model_state(index)
    return [model_state(i) for i in range(fused.models)]


def adapter_state(fused, index=None, adapter="default"):
    """Model `index`'s LoRA adapter weights (or a list of all N) as peft saves
    them (get_peft_model_state_dict): loadable with set_peft_model_state_dict,
    each at the model's own rank."""
    if index is not None:
        return peft_adapter_state(unfuse(fused, index), adapter)
    return [peft_adapter_state(state, adapter) for state in unfuse(fused)]
