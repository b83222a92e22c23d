"""How a tensor of a fused array holds its N models, and the conversions
between those layouts that colo.fuse's rewritten forward calls.

Three layouts:

* PLAIN: the same for every model (the input batch, a shape, a constant).
* MODEL_MAJOR: [N, *single], model i's tensor is x[i]. Parameters, linear
  layers, attention and every reshape work here.
* STACKED: a single model's [B, C, ...] as [B, N*C, ...], model i owning
  channels [i*C, (i+1)*C). Convolutions, normalisation over channels and
  pooling work here, as one grouped operation over all models.
"""
import torch

PLAIN = "plain"
MODEL_MAJOR = "model_major"
STACKED = "stacked"


def stacked_to_model_major(x, n):
    """[B, N*C, ...] -> [N, B, C, ...] (a view, no copy)."""
    return x.view(x.shape[0], n, x.shape[1] // n, *x.shape[2:]).transpose(0, 1)


def model_major_to_stacked(x, n):
    """[N, B, C, ...] -> [B, N*C, ...] (a copy unless already in that order)."""
    return x.transpose(0, 1).reshape(x.shape[1], n * x.shape[2], *x.shape[3:])


def plain_to_model_major(x, n):
    """The same tensor for every model, [N, *x.shape] (a view, no copy)."""
    return x.unsqueeze(0).expand(n, *x.shape)


def plain_to_stacked(x, n):
    """[B, C, ...] repeated for every model: [B, N*C, ...]."""
    return x.repeat(1, n, *([1] * (x.dim() - 2)))


def convert(x, source, target, n):
    """x from layout `source` to layout `target` (non-tensors are left alone)."""
    if source == target or not isinstance(x, torch.Tensor):
        return x
    if target == MODEL_MAJOR:
        return stacked_to_model_major(x, n) if source == STACKED else plain_to_model_major(x, n)
    if target == STACKED:
        return model_major_to_stacked(x, n) if source == MODEL_MAJOR else plain_to_stacked(x, n)
    raise ValueError(f"colo.fuse: cannot turn a per-model ({source}) tensor into a plain one")


def align_model_major(x, rank):
    """A model-major x [N, *s] with singleton axes after the model axis so that
    its single-model part broadcasts like a tensor of `rank` dimensions."""
    missing = rank - (x.dim() - 1)
    return x.view(x.shape[0], *([1] * missing), *x.shape[1:]) if missing > 0 else x


def single_shape(x, layout, n):
    """The shape one model's tensor has."""
    if layout == MODEL_MAJOR:
        return x.shape[1:]
    if layout == STACKED:
        return torch.Size([x.shape[0], x.shape[1] // n, *x.shape[2:]])
    return x.shape
