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



# Tensor-core GEMMs want every dimension a multiple of 8 elements (16 bytes
# of bf16); a frozen projection to an odd width (GPT-2's 50257-token
# vocabulary, BERT's 30522) falls back to far slower kernels.
_ALIGNED = 64


def needs_padding(layer):
    """Whether a shared frozen Linear is worth running with its output
    width padded to a multiple of 64 (a wide, misaligned projection)."""
    return isinstance(layer, torch.nn.Linear) and layer.out_features >= 1024 and layer.out_features % _ALIGNED != 0


class PaddedLinear(torch.nn.Module):
    """A frozen Linear whose GEMM runs on a copy of its weight zero-padded to
    a multiple of 64 rows, the output cut back to its width. Its state_dict
    is the Linear's (weight, bias); the padded copy stays out of it."""

    def __init__(self, layer):
        super().__init__()
        self.out_features = layer.out_features
        self.weight, self.bias = layer.weight, layer.bias
        rows = -(-layer.out_features // _ALIGNED) * _ALIGNED
        self.register_buffer("padded_weight", torch.zeros(rows, layer.in_features, dtype=layer.weight.dtype),
                             persistent=False)
        self.padded_weight[:layer.out_features] = layer.weight.detach()
        self.register_buffer("padded_bias", None if layer.bias is None else torch.zeros(rows, dtype=layer.bias.dtype),
                             persistent=False)
        if layer.bias is not None:
            self.padded_bias[:layer.out_features] = layer.bias.detach()

    def forward(self, x):
        return torch.nn.functional.linear(x, self.padded_weight, self.padded_bias)[..., :self.out_features]
