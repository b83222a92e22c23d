"""Frozen parts the N models of a fused array share: parameters that no
model trains (requires_grad=False) and that hold the same values in every
model, as after loading one pretrained checkpoint. colo.fuse keeps one copy
of such a layer. On the batch every model sees (a plain value) it runs once
for all models; on per-model values it runs as one operation over all N
models' rows with its weights held once."""
import torch

# Layers that act on the trailing dimensions only: they take a model-major
# [N, B, ..., features] tensor as they are, one GEMM or kernel for all N.
_TRAILING = (torch.nn.Linear, torch.nn.LayerNorm, torch.nn.Embedding, torch.nn.Identity)
if hasattr(torch.nn, "RMSNorm"):
    _TRAILING += (torch.nn.RMSNorm,)

# Layers that act on each sample on its own with channels on axis 1: the N
# models' batches are folded into one batch of N*B samples.
_PER_SAMPLE = (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d, torch.nn.ConvTranspose1d,
               torch.nn.ConvTranspose2d, torch.nn.GroupNorm)


def _frozen_alike(tensors):
    first = tensors[0]
    return all(not t.requires_grad and t.shape == first.shape and t.dtype == first.dtype and torch.equal(t, first)
               for t in tensors)


def shared_frozen_parameters(models):
    """Names of the parameters that are frozen in every model and equal
    across all of them."""
    named = [dict(m.named_parameters()) for m in models]
    return {name for name in named[0] if all(name in n for n in named)
            and _frozen_alike([n[name] for n in named])}


def is_shared_layer(models, path, shared_parameters):
    """Whether the layer at `path` has parameters or buffers, all of them
    shared: every parameter in `shared_parameters`, every buffer equal in
    every model."""
    layers = [m.get_submodule(path) for m in models]
    parameters = [f"{path}.{name}" for name, _ in layers[0].named_parameters()]
    buffers = [dict(layer.named_buffers()) for layer in layers]
    if not parameters and not buffers[0]:
        return False
    if any(name not in shared_parameters for name in parameters):
        return False
    return all(all(name in b and b[name].shape == value.shape and torch.equal(b[name], value) for b in buffers[1:])
               for name, value in buffers[0].items())


def per_model_form(layer):
    """How a shared layer runs on a model-major input: "trailing" (as it is),
    "folded" (over N*B samples), or None where it cannot. BatchNorm is None:
    in training mode its batch statistics would mix the models' batches, and
    its few parameters are not worth sharing."""
    if isinstance(layer, _TRAILING):
        return "trailing"
    if isinstance(layer, _PER_SAMPLE):
        return "folded"
    return None


def fold_models(x):
    """A model-major [N, B, ...] as one batch [N*B, ...]."""
    return x.flatten(0, 1)


def unfold_models(y, n):
    """One batch [N*B, ...] back to model-major [N, B, ...]."""
    return y.view(n, y.shape[0] // n, *y.shape[1:])


def state_names(layer, path):
    """The state_dict names a shared layer at `path` contributes."""
    return {f"{path}.{name}" for name in layer.state_dict()}

