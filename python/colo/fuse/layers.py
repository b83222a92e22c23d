"""Fused layers: one module running the same layer of N models at once. Each
is built from the N single layers (`from_modules`), keeps their parameters
and buffers stacked under the single layer's names, and declares which
layouts (colo.fuse.layout) it takes and gives. forward(x, layout) receives x
in one of the layouts it takes."""
import torch
import torch.nn.functional as F

from colo.fuse.layout import MODEL_MAJOR, PLAIN, STACKED
from colo.fuse.stacking import FuseError, require_alike, stack_into

try:
    from colo import _core
except ImportError:  # colo.fuse still works on ATen alone; colo's kernels need the built core
    _core = None


class FusedLayer(torch.nn.Module):
    """Base of the fused layers: `takes` lists the input layouts forward
    accepts, preferred first; `gives` is the layout of its output (None: the
    layout it was given)."""
    takes = (MODEL_MAJOR,)
    gives = MODEL_MAJOR

    def __init__(self, modules, where):
        super().__init__()
        require_alike(modules, where)
        self.models = len(modules)
        stack_into(self, modules, where)


def model_major_linear(x, weight, bias):
    """x [N, ..., in] @ weight[N, out, in]^T + bias[N, out] (bias may be None):
    N linear layers as one batched GEMM."""
    n = weight.shape[0]
    flat = x.reshape(n, -1, x.shape[-1])
    y = torch.bmm(flat, weight.transpose(1, 2)) if bias is None \
        else torch.baddbmm(bias.unsqueeze(1), flat, weight.transpose(1, 2))
    return y.view(*x.shape[:-1], weight.shape[1])


def _own_kernels_usable(x, weight):
    return (_core is not None and x.is_cuda and x.dtype == torch.float32 and weight.dtype == torch.float32
            and not torch.is_autocast_enabled())


class FusedConv(FusedLayer):
    """Conv1d, Conv2d and ConvTranspose2d of N models as one grouped
    convolution over stacked channels; a shared (plain) input runs one
    ungrouped convolution with N times the filters. Conv2d runs on colo's own
    CUDA kernels where they apply (small groups, stride 1, float32)."""
    takes = (PLAIN, STACKED)
    gives = STACKED

    def __init__(self, modules, where, own_kernels=True, channels_last=False):
        super().__init__(modules, where)
        self.channels_last = channels_last
        m = modules[0]
        self.transposed = isinstance(m, torch.nn.ConvTranspose2d)
        self.dims = 1 if isinstance(m, torch.nn.Conv1d) else 2
        self.groups = m.groups
        self.stride, self.padding, self.dilation = m.stride, m.padding, m.dilation
        self.output_padding = getattr(m, "output_padding", 0)
        self.padding_mode = m.padding_mode
        self.pre_padding = getattr(m, "_reversed_padding_repeated_twice", None)
        self.own_kernels = own_kernels and self.dims == 2 and not self.transposed
        if self.transposed or self.groups != 1:
            self.takes = (STACKED,)
        if channels_last and self.dims == 2 and not self.transposed:
            # Stored so that weight.flatten(0, 1) is already NHWC: no layout
            # copy per step, and the gradient arrives in the same layout.
            w = self.weight.data
            self.weight.data = w.permute(0, 1, 3, 4, 2).contiguous().permute(0, 1, 4, 2, 3)

    def forward(self, x, layout):
        groups = self.groups if layout == PLAIN else self.groups * self.models
        weight = self.weight.flatten(0, 1)
        bias = None if self.bias is None else self.bias.flatten()
        padding = self.padding
        if self.padding_mode != "zeros":
            x, padding = F.pad(x, self.pre_padding, mode=self.padding_mode), 0
        if self.transposed:
            return F.conv_transpose2d(x, weight, bias, self.stride, padding, self.output_padding, groups,
                                      self.dilation)
        if (self.own_kernels and not self.channels_last and isinstance(padding, tuple) and padding[0] == padding[1]
                and self.stride == (1, 1) and self.dilation == (1, 1) and _own_kernels_usable(x, weight)):
            return _core.grouped_conv2d(x, weight, bias, 1, padding[0], groups)
        if self.dims == 1:
            return F.conv1d(x, weight, bias, self.stride, padding, self.dilation, groups)
        if self.channels_last:  # NHWC: cuDNN's faster grouped-convolution kernels
            x = x.contiguous(memory_format=torch.channels_last)
            weight = weight.contiguous(memory_format=torch.channels_last)
        return F.conv2d(x, weight, bias, self.stride, padding, self.dilation, groups)


class FusedLinear(FusedLayer):
    """N Linear layers as one batched GEMM; a shared (plain) input runs one
    GEMM with N times the output columns."""
    takes = (MODEL_MAJOR, PLAIN)
    gives = MODEL_MAJOR

    def forward(self, x, layout):
        n, out_features, in_features = self.weight.shape
        if layout == PLAIN:
            rows = x.reshape(-1, in_features)
            y = rows.matmul(self.weight.reshape(n * out_features, in_features).t())
            if self.bias is not None:
                y = y + self.bias.flatten()
            return y.view(rows.shape[0], n, out_features).transpose(0, 1).reshape(n, *x.shape[:-1], out_features)
        return model_major_linear(x, self.weight, self.bias)


class FusedBatchNorm(FusedLayer):
    """BatchNorm1d/2d/3d of N models over stacked channels; every model keeps
    its own running statistics."""
    takes = (STACKED,)
    gives = STACKED

    def __init__(self, modules, where):
        super().__init__(modules, where)
        m = modules[0]
        if m.momentum is None and m.track_running_stats:
            raise FuseError(f"colo.fuse: '{where}' uses a cumulative moving average (momentum=None), "
                            "which colo.fuse does not support")
        self.momentum, self.eps, self.track_running_stats = m.momentum, m.eps, m.track_running_stats

    def forward(self, x, layout):
        use_batch = self.training or not self.track_running_stats
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
        flat = (lambda t: None if t is None else t.view(-1))
        return F.batch_norm(x, flat(self.running_mean), flat(self.running_var), flat(self.weight),
                            flat(self.bias), use_batch, self.momentum, self.eps)


class FusedGroupNorm(FusedLayer):
    """GroupNorm of N models: N times the groups over stacked channels."""
    takes = (STACKED,)
    gives = STACKED

    def __init__(self, modules, where):
        super().__init__(modules, where)
        self.num_groups, self.eps = modules[0].num_groups, modules[0].eps

    def forward(self, x, layout):
        flat = (lambda t: None if t is None else t.flatten())
        return F.group_norm(x, self.num_groups * self.models, flat(self.weight), flat(self.bias), self.eps)


class FusedLayerNorm(FusedLayer):
    """LayerNorm of N models over the trailing dimensions of model-major tensors."""

    def __init__(self, modules, where):
        super().__init__(modules, where)
        self.normalized_shape, self.eps = tuple(modules[0].normalized_shape), modules[0].eps

    def forward(self, x, layout):
        y = F.layer_norm(x, self.normalized_shape, None, None, self.eps)
        if self.weight is None:
            return y
        shape = (self.models,) + (1,) * (x.dim() - 1 - len(self.normalized_shape)) + self.normalized_shape
        return torch.addcmul(self.bias.view(shape), y, self.weight.view(shape)) if self.bias is not None \
            else y * self.weight.view(shape)


class FusedEmbedding(FusedLayer):
    """Embedding tables of N models; plain token ids give model-major vectors."""
    takes = (PLAIN, MODEL_MAJOR)

    def __init__(self, modules, where):
        super().__init__(modules, where)
        m = modules[0]
        if m.max_norm is not None or m.sparse:
            raise FuseError(f"colo.fuse: '{where}' uses max_norm or sparse gradients, which colo.fuse does not support")
        self.padding_idx = m.padding_idx

    def forward(self, tokens, layout):
        n, vocab, dim = self.weight.shape
        offsets = torch.arange(n, device=tokens.device).view(n, *([1] * (tokens.dim() - (layout != PLAIN))))
        ids = tokens + offsets * vocab
        flat = self.weight.view(n * vocab, dim)
        if self.padding_idx is not None:
            # The padding row takes no gradient, as in nn.Embedding.
            is_padding = (tokens == self.padding_idx).unsqueeze(-1)
            return torch.where(is_padding, F.embedding(ids, flat.detach()), F.embedding(ids, flat))
        return F.embedding(ids, flat)


class FusedDropout(torch.nn.Module):
    """nn.Dropout (elementwise) or a channel dropout (Dropout1d/2d/3d) with one
    rate per model; follows the fused module's train()/eval(). Its output
    has the layout of its input (gives None)."""
    gives = None

    def __init__(self, rates, channelwise=False):
        super().__init__()
        self.rates = [float(r) for r in rates]
        self.channelwise = channelwise
        self.same_rate = len(set(self.rates)) == 1
        # Equal rates run ATen's dropout on any layout; channel dropout needs
        # channels on axis 1 (stacked).
        self.takes = (STACKED,) if channelwise and self.same_rate else (MODEL_MAJOR, STACKED)
        self.register_buffer("keep", torch.tensor([1.0 - r for r in self.rates]), persistent=False)

    def forward(self, x, layout):
        if not self.training or max(self.rates) == 0:
            return x
        if self.same_rate:
            drop = F.dropout2d if self.channelwise else F.dropout
            return drop(x, self.rates[0], True)
        if layout == STACKED:
            raise AssertionError("per-model rates run model-major")
        keep = self.keep.to(x.dtype).view(-1, *([1] * (x.dim() - 1)))
        mask_shape = x.shape[:3] + (1,) * (x.dim() - 3) if self.channelwise else x.shape
        mask = torch.rand(mask_shape, device=x.device, dtype=x.dtype) < keep
        return x * mask / keep
