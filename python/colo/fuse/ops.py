"""What colo.fuse does with each function and method a traced forward calls:
the tables of operations it knows, and the per-model implementations
(closures over the model count) that the rewritten forward calls instead.

Kinds of operation:
  elementwise  layout kept; per-model tensors aligned so they broadcast as
               single-model tensors would
  dim          takes dimension arguments; on model-major tensors they move
               one axis right
  spatial      works per sample and channel (pooling, interpolation): kept
               stacked, model-major folded into the batch
  shape        sizes, views and indexing, rewritten for the model axis
"""
import operator

import torch
import torch.nn.functional as F

from colo.fuse.layout import MODEL_MAJOR, align_model_major, model_major_to_stacked, single_shape, \
    stacked_to_model_major

_ELEMENTWISE_FUNCTIONS = {
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.pow,
    operator.neg, operator.pos, operator.abs, operator.mod, operator.eq, operator.ne, operator.lt,
    operator.le, operator.gt, operator.ge, operator.and_, operator.or_, operator.invert,
    operator.iadd, operator.isub, operator.imul, operator.itruediv,
    torch.add, torch.sub, torch.mul, torch.div, torch.true_divide, torch.pow, torch.neg, torch.abs,
    torch.exp, torch.log, torch.sqrt, torch.rsqrt, torch.sin, torch.cos, torch.tanh, torch.sigmoid,
    torch.relu, torch.relu_, torch.clamp, torch.clamp_min, torch.clamp_max, torch.where, torch.maximum,
    torch.minimum, torch.erf, torch.lerp, torch.addcmul, torch.addcdiv, torch.square, torch.reciprocal,
    torch.sign, torch.nan_to_num, torch.masked_fill, torch.exp2, torch.log1p, torch.expm1,
    F.relu, F.relu6, F.gelu, F.silu, F.elu, F.selu, F.celu, F.leaky_relu, F.hardtanh, F.hardswish,
    F.hardsigmoid, F.mish, F.softplus, F.softsign, F.tanhshrink, F.logsigmoid, F.sigmoid, F.tanh,
    F.threshold,
}

_ELEMENTWISE_METHODS = {
    "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sigmoid", "tanh",
    "relu", "clamp", "clamp_min", "clamp_max", "float", "half", "bfloat16", "double", "to", "type_as",
    "contiguous", "clone", "detach", "masked_fill", "add_", "mul_", "sub_", "div_", "relu_", "clamp_",
    "sigmoid_", "tanh_", "square", "reciprocal", "sign", "sin", "cos", "erf", "masked_fill_",
    "__add__", "__mul__", "__sub__", "__truediv__", "__radd__", "__rmul__", "__rsub__", "__rtruediv__",
    "lt", "le", "gt", "ge", "eq", "ne", "type", "exp_", "log1p", "expm1", "requires_grad_",
}

# Dimension arguments: (positions after the tensor, keyword names, default
# when absent: None = no dim argument means "every dimension").
_DIM_FUNCTIONS = {
    F.softmax: ((0,), ("dim",), None), F.log_softmax: ((0,), ("dim",), None),
    torch.softmax: ((0,), ("dim",), None), torch.log_softmax: ((0,), ("dim",), None),
    torch.flatten: ((0, 1), ("start_dim", "end_dim"), (0, -1)),
    torch.unsqueeze: ((0,), ("dim",), None), torch.transpose: ((0, 1), ("dim0", "dim1"), None),
    torch.mean: ((0,), ("dim",), "all"), torch.sum: ((0,), ("dim",), "all"),
    torch.amax: ((0,), ("dim",), "all"), torch.amin: ((0,), ("dim",), "all"),
    torch.cumsum: ((0,), ("dim",), None), torch.logsumexp: ((0,), ("dim",), None),
    torch.argmax: ((0,), ("dim",), "all"), torch.argmin: ((0,), ("dim",), "all"),
    torch.chunk: ((1,), ("dim",), (None, 0)), torch.split: ((1,), ("dim",), (None, 0)),
    torch.unbind: ((0,), ("dim",), (0,)), torch.squeeze: ((0,), ("dim",), "squeeze"),
    torch.var: ((0,), ("dim",), "all"), torch.std: ((0,), ("dim",), "all"),
    torch.norm: ((1,), ("dim",), "all"), F.normalize: ((1,), ("dim",), (None, 1)),
    F.glu: ((0,), ("dim",), (-1,)), torch.narrow: ((0,), ("dim",), None),
    torch.select: ((0,), ("dim",), None), torch.movedim: ((0, 1), ("source", "destination"), None),
}
_DIM_METHODS = {
    "softmax": ((0,), ("dim",), None), "log_softmax": ((0,), ("dim",), None),
    "flatten": ((0, 1), ("start_dim", "end_dim"), (0, -1)), "unsqueeze": ((0,), ("dim",), None),
    "transpose": ((0, 1), ("dim0", "dim1"), None), "mean": ((0,), ("dim",), "all"),
    "sum": ((0,), ("dim",), "all"), "amax": ((0,), ("dim",), "all"), "amin": ((0,), ("dim",), "all"),
    "max": ((0,), ("dim",), "all"), "min": ((0,), ("dim",), "all"), "argmax": ((0,), ("dim",), "all"),
    "argmin": ((0,), ("dim",), "all"), "cumsum": ((0,), ("dim",), None), "chunk": ((1,), ("dim",), (None, 0)),
    "split": ((1,), ("dim",), (None, 0)), "unbind": ((0,), ("dim",), (0,)), "squeeze": ((0,), ("dim",), "squeeze"),
    "var": ((0,), ("dim",), "all"), "std": ((0,), ("dim",), "all"), "norm": ((1,), ("dim",), "all"),
    "unflatten": ((0,), ("dim",), None), "narrow": ((0,), ("dim",), None), "select": ((0,), ("dim",), None),
    "logsumexp": ((0,), ("dim",), None), "movedim": ((0, 1), ("source", "destination"), None),
}
_SEQUENCE_RESULTS = {torch.chunk, torch.split, torch.unbind, "chunk", "split", "unbind"}

_SPATIAL_FUNCTIONS = {
    F.max_pool1d, F.max_pool2d, F.max_pool3d, F.avg_pool1d, F.avg_pool2d, F.avg_pool3d,
    F.adaptive_avg_pool1d, F.adaptive_avg_pool2d, F.adaptive_avg_pool3d, F.adaptive_max_pool1d,
    F.adaptive_max_pool2d, F.adaptive_max_pool3d, F.interpolate, F.pixel_shuffle, F.pixel_unshuffle,
    torch.max_pool2d, torch.avg_pool1d, torch.adaptive_avg_pool1d,
}

_CONCATENATIONS = {torch.cat, torch.stack, torch.concat}
_SHAPE_METHODS = {"view", "reshape", "expand", "repeat", "permute", "size", "dim", "numel"}
_DROPOUT_FUNCTIONS = {F.dropout: False, F.dropout1d: True, F.dropout2d: True, F.dropout3d: True,
                      F.alpha_dropout: False, torch.dropout: False} if hasattr(F, "dropout1d") else \
    {F.dropout: False, F.dropout2d: True, F.dropout3d: True, F.alpha_dropout: False, torch.dropout: False}
_PASSTHROUGH_GETATTR = {"dtype", "device", "is_cuda", "requires_grad", "layout"}

# Parameter-less nn modules, by the kind of operation they are.
_ELEMENTWISE_MODULES = (
    torch.nn.ReLU, torch.nn.ReLU6, torch.nn.GELU, torch.nn.SiLU, torch.nn.ELU, torch.nn.SELU, torch.nn.CELU,
    torch.nn.LeakyReLU, torch.nn.Hardtanh, torch.nn.Hardswish, torch.nn.Hardsigmoid, torch.nn.Mish,
    torch.nn.Softplus, torch.nn.Softsign, torch.nn.Tanh, torch.nn.Sigmoid, torch.nn.LogSigmoid,
    torch.nn.Tanhshrink, torch.nn.Threshold, torch.nn.Identity, torch.nn.ZeroPad2d, torch.nn.ConstantPad2d,
)
_SPATIAL_MODULES = (
    torch.nn.MaxPool1d, torch.nn.MaxPool2d, torch.nn.MaxPool3d, torch.nn.AvgPool1d, torch.nn.AvgPool2d,
    torch.nn.AvgPool3d, torch.nn.AdaptiveAvgPool1d, torch.nn.AdaptiveAvgPool2d, torch.nn.AdaptiveAvgPool3d,
    torch.nn.AdaptiveMaxPool1d, torch.nn.AdaptiveMaxPool2d, torch.nn.AdaptiveMaxPool3d, torch.nn.Upsample,
    torch.nn.PixelShuffle, torch.nn.PixelUnshuffle,
)
_RELU = {F.relu, torch.relu, "relu"}


def passes_through_getattr(name):
    """Whether attribute `name` of a per-model tensor is the same for every
    model (dtype, device, ...)."""
    return name in _PASSTHROUGH_GETATTR


def kind_of_function(target):
    """'elementwise' | 'dim' | 'spatial' | 'concat' | 'dropout' | 'getitem' |
    'matmul' | 'linear' | 'pad' | 'attention' | None (unknown) for a
    call_function target."""
    if target is operator.getitem:
        return "getitem"
    if target in (torch.matmul, operator.matmul):
        return "matmul"
    if target is F.linear:
        return "linear"
    if target is F.pad:
        return "pad"
    if target is getattr(F, "scaled_dot_product_attention", None):
        return "attention"
    for kind, table in (("elementwise", _ELEMENTWISE_FUNCTIONS), ("dim", _DIM_FUNCTIONS),
                        ("spatial", _SPATIAL_FUNCTIONS), ("concat", _CONCATENATIONS),
                        ("dropout", _DROPOUT_FUNCTIONS)):
        if target in table:
            return kind
    return None


def kind_of_method(name):
    """The kind of a call_method (see kind_of_function), or None."""
    if name in _ELEMENTWISE_METHODS:
        return "elementwise"
    if name in _DIM_METHODS:
        return "dim"
    if name in _SHAPE_METHODS:
        return "shape"
    if name in ("matmul", "__matmul__"):
        return "matmul"
    return None


def kind_of_module(module):
    """The kind of a parameter-less nn module used as a function, or None."""
    if isinstance(module, _ELEMENTWISE_MODULES):
        return "elementwise"
    if isinstance(module, _SPATIAL_MODULES):
        return "spatial"
    if isinstance(module, (torch.nn.Softmax, torch.nn.LogSoftmax, torch.nn.Flatten, torch.nn.Unflatten)):
        return "dim"
    return None


def is_relu(node_target, module=None):
    """Whether a call is a (not in-place-only) ReLU."""
    return (module is not None and type(module) is torch.nn.ReLU) or node_target in _RELU


def is_max_pool_2x2(target, args, kwargs, module=None):
    """Whether a call is max_pool2d with a 2x2 window, stride 2, no padding."""
    as_pair = (lambda v: v if isinstance(v, (tuple, list)) else (v, v))
    if module is not None:
        return (type(module) is torch.nn.MaxPool2d and as_pair(module.kernel_size) == (2, 2)
                and as_pair(module.stride) == (2, 2) and as_pair(module.padding) == (0, 0)
                and as_pair(module.dilation) == (1, 1) and not module.ceil_mode and not module.return_indices)
    if target not in (F.max_pool2d, torch.max_pool2d):
        return False
    names = ("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices")
    given = dict(zip(names, args[1:]), **kwargs)
    stride = given.get("stride") or given.get("kernel_size")
    return (as_pair(given.get("kernel_size")) == (2, 2) and as_pair(stride) == (2, 2)
            and as_pair(given.get("padding", 0)) == (0, 0) and as_pair(given.get("dilation", 1)) == (1, 1)
            and not given.get("ceil_mode", False) and not given.get("return_indices", False))


def module_as_function(module):
    """A parameter-less dim module as (function, extra args): Softmax(dim) is
    F.softmax(x, dim), Flatten(a, b) is torch.flatten(x, a, b)."""
    if isinstance(module, torch.nn.Flatten):
        return torch.flatten, (module.start_dim, module.end_dim)
    if isinstance(module, torch.nn.Unflatten):
        return "unflatten", (module.dim, tuple(module.unflattened_size))
    if isinstance(module, torch.nn.Softmax):
        return F.softmax, (module.dim,)
    return F.log_softmax, (module.dim,)


def dim_spec(target):
    """(positions, keywords, default) of a dim operation."""
    return _DIM_FUNCTIONS[target] if not isinstance(target, str) else _DIM_METHODS[target]


def returns_sequence(target):
    return target in _SEQUENCE_RESULTS


def dropout_channelwise(target):
    return _DROPOUT_FUNCTIONS[target]


def stacked_dims_kept(target, args, kwargs):
    """Whether a dim operation on a stacked tensor [B, N*C, ...] may run as is:
    every dimension it names, given or by default, is a literal >= 2 (a
    spatial one), or a default counting from the end (flatten's end_dim)."""
    positions, names, default = dim_spec(target)
    if not isinstance(default, tuple) and default is not None:
        default = (default,) * len(positions)
    for i, (pos, name) in enumerate(zip(positions, names)):
        value = kwargs.get(name, args[1 + pos] if len(args) > 1 + pos else None)
        if value is None:
            fallback = default[-len(positions) + i] if default else None
            if not isinstance(fallback, int) or 0 <= fallback < 2:
                return False
            continue
        dims = value if isinstance(value, (tuple, list)) else [value]
        if not all(isinstance(d, int) and d >= 2 for d in dims):
            return False
    return True


# ---- runtime implementations (closures the rewritten forward calls) ----

def _shift(dim, rank):
    """A single-model dimension of a tensor of `rank` dims, on its model-major form."""
    if isinstance(dim, (tuple, list)):
        return type(dim)(_shift(d, rank) for d in dim)
    return dim + 1 if isinstance(dim, int) and dim >= 0 else dim


def _named(fn, name):
    fn.__name__ = fn.__qualname__ = "colo_" + "".join(c if c.isalnum() else "_" for c in name)
    return fn


def as_function(target, extra_args=()):
    """A module, method name or function as a named function of (x, *args),
    with `extra_args` appended: what a graph node may call."""
    def run(*args, **kwargs):
        return call(target, list(args) + list(extra_args), kwargs)
    return _named(run, target_name(target))


def call(target, args, kwargs):
    if isinstance(target, str):
        return getattr(args[0], target)(*args[1:], **kwargs)
    return target(*args, **kwargs)


def target_name(target):
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", type(target).__name__)


def elementwise_mixed(target, fused_positions, layout, n):
    """An elementwise call where the arguments at `fused_positions` (indices
    or keyword names) are per-model in `layout` and the other tensors plain."""
    def run(*args, **kwargs):
        args = list(args)
        get = (lambda p: args[p] if isinstance(p, int) else kwargs[p])

        def put(p, v):
            if isinstance(p, int):
                args[p] = v
            else:
                kwargs[p] = v
        fused = [get(p) for p in fused_positions]
        if layout == MODEL_MAJOR:
            plain_rank = max([a.dim() for i, a in enumerate(args) if isinstance(a, torch.Tensor)
                              and i not in fused_positions] + [0])
            rank = max([t.dim() - 1 for t in fused] + [plain_rank])
            for p, t in zip(fused_positions, fused):
                put(p, align_model_major(t, rank))
        else:  # stacked: a plain tensor with a channel axis is repeated per model
            rank = fused[0].dim()  # (one of size 1 broadcasts over every model's channels as it is)
            for i, a in enumerate(args):
                if isinstance(a, torch.Tensor) and i not in fused_positions and a.dim() >= rank - 1 and a.dim() >= 2:
                    axis = a.dim() - (rank - 1)
                    if a.shape[axis] == 1:
                        continue
                    reps = [1] * a.dim()
                    reps[axis] = n
                    args[i] = a.repeat(*reps)
        return call(target, args, kwargs)
    return _named(run, target_name(target))


def dim_op(target, n, extra_args=()):
    """A dim operation on a model-major tensor: its dimension arguments shifted
    past the model axis; "every dimension" becomes every one but the model's."""
    positions, names, default = dim_spec(target)

    def run(x, *args, **kwargs):
        args = list(args) + list(extra_args)
        rank = x.dim() - 1
        given = False
        for pos, name in zip(positions, names):
            if name in kwargs and kwargs[name] is not None:
                kwargs[name] = _shift(kwargs[name], rank)
                given = True
            elif len(args) > pos and args[pos] is not None:
                args[pos] = _shift(args[pos], rank)
                given = True
        if not given:
            if default == "all":
                reduced = call(target, [x.flatten(1)] + args[:positions[0]], dict(kwargs, dim=1))
                return reduced.values if hasattr(reduced, "values") and not isinstance(reduced, torch.Tensor) \
                    else reduced
            if default == "squeeze":
                return x.view(x.shape[0], *[s for s in x.shape[1:] if s != 1])
            if isinstance(default, tuple):
                for pos, name, value in zip(positions, names, default[-len(positions):]):
                    if value is not None:
                        kwargs[name] = _shift(value, rank)
        return call(target, [x] + args, kwargs)
    return _named(run, "dim_" + target_name(target))


def spatial(target, n, extra=None):
    """A per-sample, per-channel operation on a model-major tensor: the model
    axis folded into the batch and back."""
    fn = extra or target

    def run(x, *args, **kwargs):
        y = call(fn, [x.flatten(0, 1)] + list(args), kwargs)
        return y.view(x.shape[0], x.shape[1], *y.shape[1:])
    return _named(run, "spatial_" + target_name(target))


def shape_op(name, layout, n):
    """size/dim/numel/view/reshape/expand/repeat/permute of a per-model tensor."""
    def run(x, *args, **kwargs):
        if name == "size":
            shape = single_shape(x, layout, n)
            dim = args[0] if args else kwargs.get("dim")
            return shape if dim is None else shape[dim]
        if name == "dim":
            return x.dim() - (layout == MODEL_MAJOR)
        if name == "numel":
            return x.numel() // n
        sizes = args[0] if len(args) == 1 and isinstance(args[0], (tuple, list, torch.Size)) else args
        if name in ("view", "reshape"):
            return x.reshape(x.shape[0], *sizes)
        if name == "expand":
            return align_model_major(x, len(sizes)).expand(-1, *sizes)
        if name == "repeat":
            return align_model_major(x, len(sizes)).repeat(1, *sizes)
        rank = x.dim() - 1
        return x.permute(0, *[(d % rank) + 1 for d in sizes])
    return _named(run, name)


def single_getattr(name, layout, n):
    """x.shape / x.ndim of one model's tensor."""
    def run(x):
        shape = single_shape(x, layout, n)
        return shape if name == "shape" else len(shape)
    return _named(run, "single_" + name)


def index_model_major(x, index):
    """x[index] of each model, on a model-major tensor."""
    if not isinstance(index, tuple):
        index = (index,)
    if index and index[0] is Ellipsis:
        return x[index]
    return x[(slice(None),) + index]


def concat(target, n):
    """torch.cat/stack of model-major tensors along a single-model dimension."""
    def run(tensors, dim=0, **kwargs):
        rank = max(t.dim() - 1 for t in tensors)
        tensors = [align_model_major(t, rank) for t in tensors]
        return target(tensors, _shift(dim, rank), **kwargs)
    return _named(run, target_name(target))


def matmul_of(a_fused, b_fused):
    """torch.matmul with model-major operands marked by position."""
    def run(a, b):
        rank = max(a.dim() - a_fused, b.dim() - b_fused, 2)
        if a_fused:
            a = align_model_major(a, rank)
        if b_fused:
            b = align_model_major(b, rank)
        return torch.matmul(a, b)
    return _named(run, "matmul")


def linear_of(n):
    """F.linear(x, weight, bias) with model-major weight (a parameter used
    functionally) and model-major or plain x."""
    def run(x, weight, bias=None, x_fused=True):
        rank = max(x.dim() - x_fused, 2)
        if not x_fused:
            x = x.unsqueeze(0)
        y = torch.matmul(align_model_major(x, rank) if x_fused else x,
                         align_model_major(weight.transpose(-2, -1), rank))
        return y if bias is None else y + align_model_major(bias, rank)
    return _named(run, "linear")


def pad(layout, n):
    """F.pad of a per-model tensor: padding the trailing (spatial) dims runs
    on it as it is (model-major: the model axis folded into the batch, as
    non-constant modes allow no extra axis); padding that reaches the channels
    of a stacked tensor runs model-major."""
    def run(x, padding, *args, **kwargs):
        padded = len(padding) // 2
        if layout == MODEL_MAJOR:
            if padded < x.dim() - 1:
                y = F.pad(x.flatten(0, 1), padding, *args, **kwargs)
                return y.view(x.shape[0], x.shape[1], *y.shape[1:])
            return F.pad(x, padding, *args, **kwargs)
        if padded <= x.dim() - 2:
            return F.pad(x, padding, *args, **kwargs)
        return model_major_to_stacked(F.pad(stacked_to_model_major(x, n), padding, *args, **kwargs), n)
    return _named(run, "pad")


def relu_max_pool_2x2():
    """max_pool2d(relu(x), 2) on colo's own CUDA kernels where they apply."""
    from colo.fuse.layers import _core

    def run(x):
        if _core is not None and not torch.is_autocast_enabled():
            return _core.relu_max_pool2x2(x)
        return F.max_pool2d(F.relu(x), 2)
    return _named(run, "relu_max_pool2x2")



def attention_over_models(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, **kwargs):
    """F.scaled_dot_product_attention of model-major q, k, v [N, B, ...]: the
    model axis folded into the batch, one fused attention kernel for all
    models. A plain mask with the batch axis is repeated for every model; one
    without it broadcasts."""
    n, batch = q.shape[0], q.shape[1]
    if attn_mask is not None and attn_mask.dim() == q.dim() - 1:
        attn_mask = attn_mask.repeat(n, *([1] * (attn_mask.dim() - 1)))
    y = F.scaled_dot_product_attention(q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), attn_mask=attn_mask,
                                       dropout_p=dropout_p, is_causal=is_causal, **kwargs)
    return y.view(n, batch, *y.shape[1:])
