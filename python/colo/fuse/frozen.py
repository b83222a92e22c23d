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



def autocast_dtype(device_type):
    """The lower precision autocast runs matmuls and convolutions in on
    `device_type` now, or None when it is off there."""
    if hasattr(torch, "get_autocast_dtype"):  # torch >= 2.4
        if not torch.is_autocast_enabled(device_type):
            return None
        dtype = torch.get_autocast_dtype(device_type)
    elif device_type == "cuda":
        if not torch.is_autocast_enabled():
            return None
        dtype = torch.get_autocast_gpu_dtype()
    elif device_type == "cpu":
        if not torch.is_autocast_cpu_enabled():
            return None
        dtype = torch.get_autocast_cpu_dtype()
    else:
        return None
    return dtype if dtype in (torch.float16, torch.bfloat16) else None


class CastOnce:
    """For a shared frozen layer: under autocast to a lower precision, its
    float32 weight and bias are used from copies in that precision made once,
    the same values autocast would make. Autocast itself caches only casts of
    parameters that require grad, so it casts a frozen weight again at every
    call (a frozen backbone's every weight, every step). A copy is made again
    when its source changes (load_state_dict, a move to another device)."""

    def _low_precision(self, x, weight, bias):
        if weight.requires_grad or weight.dtype != torch.float32:
            return weight, bias
        dtype = autocast_dtype(x.device.type)
        if dtype is None:
            return weight, bias
        key = (dtype, weight.data_ptr(), weight._version,
               None if bias is None else (bias.data_ptr(), bias._version, bias.dtype))
        cached = self.__dict__.get("_colo_low_precision")
        if cached is None or cached[0] != key:
            # Ordinary tensors even when first made under inference_mode, so
            # that a later training step may save them for backward.
            with torch.no_grad(), torch.inference_mode(False):
                cast_bias = None if bias is None or bias.dtype != torch.float32 else bias.to(dtype)
                cached = (key, weight.to(dtype), bias if cast_bias is None else cast_bias)
            self.__dict__["_colo_low_precision"] = cached
        return cached[1], cached[2]


class CastOnceLinear(CastOnce, torch.nn.Linear):
    """A shared frozen nn.Linear (see CastOnce)."""

    def forward(self, x):
        weight, bias = self._low_precision(x, self.weight, self.bias)
        return torch.nn.functional.linear(x, weight, bias)


class _CastOnceConv(CastOnce):
    def forward(self, x):
        weight, bias = self._low_precision(x, self.weight, self.bias)
        return self._conv_forward(x, weight, bias)


class CastOnceConv1d(_CastOnceConv, torch.nn.Conv1d):
    """A shared frozen nn.Conv1d (see CastOnce)."""


class CastOnceConv2d(_CastOnceConv, torch.nn.Conv2d):
    """A shared frozen nn.Conv2d (see CastOnce)."""


class CastOnceConv3d(_CastOnceConv, torch.nn.Conv3d):
    """A shared frozen nn.Conv3d (see CastOnce)."""


_CAST_ONCE = {torch.nn.Linear: CastOnceLinear, torch.nn.Conv1d: CastOnceConv1d, torch.nn.Conv2d: CastOnceConv2d,
              torch.nn.Conv3d: CastOnceConv3d}


def cast_once(layer):
    """Makes `layer`, colo's own copy of a shared frozen layer, cast its
    weights to autocast's precision once (CastOnce) when it is a plain
    Linear or convolution; other layers are left as they are. Its
    state_dict, repr and behaviour outside autocast stay the same."""
    cast_class = _CAST_ONCE.get(type(layer))
    if cast_class is not None:
        layer.__class__ = cast_class
    return layer


# Tensor-core GEMMs want every dimension a multiple of 8 elements (16 bytes
# of bf16); a frozen projection to an odd width (GPT-2's 50257-token
# vocabulary, BERT's 30522) falls back to far slower kernels.
_ALIGNED = 64


def needs_padding(layer):
    """Whether a shared frozen Linear is worth running with its output
    width padded to a multiple of 64 (a wide, misaligned projection)."""
    return isinstance(layer, torch.nn.Linear) and layer.out_features >= 1024 and layer.out_features % _ALIGNED != 0


class PaddedLinear(CastOnce, torch.nn.Module):
    """A frozen Linear whose GEMM runs on a copy of its weight zero-padded to
    a multiple of 64 rows, the output cut back to its width. Its state_dict
    is the Linear's (weight, bias); the padded copy stays out of it. Under
    autocast the copy is cast once (CastOnce)."""

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
        weight, bias = self._low_precision(x, self.padded_weight, self.padded_bias)
        return torch.nn.functional.linear(x, weight, bias)[..., :self.out_features]
