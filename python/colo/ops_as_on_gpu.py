"""The ops colo.estimate records on the CPU as a CUDA GPU runs them, where
the two differ in what they keep for backward or in their types:
scaled_dot_product_attention (fused kernels, or the math path where the
GPU takes it: a mask not contiguous in its last dimension, grouped-query
attention in float32), dropout (a one-byte mask), autocast's
policy (float32 norms and softmax), and float16 (bfloat16 where this CPU
lacks it). Each is a context manager that patches torch while recording."""
import contextlib
import functools
import warnings

import torch
import torch.nn.functional as F


class ScaledDotProductEfficientAttention(torch.autograd.Function):
    """Attention as the GPU's fused kernels (memory-efficient or flash
    attention) keep it for backward: query, key, value and the output, never
    the sequence x sequence weights that the CPU's math path saves. Its
    backward node, ScaledDotProductEfficientAttentionBackward, has a rule in
    colo's estimator (training_graph.cpp)."""

    @staticmethod
    def forward(ctx, q, k, v, attn_mask, dropout_p, is_causal, scale):
        ctx.options = dict(attn_mask=attn_mask, is_causal=is_causal)
        if scale is not None:
            ctx.options["scale"] = scale
        with torch.no_grad():
            out = _SDPA(q, k, v, dropout_p=dropout_p, **ctx.options)
        ctx.save_for_backward(q, k, v)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v = (t.detach().requires_grad_() for t in ctx.saved_tensors)
        with torch.enable_grad():
            out = _SDPA(q, k, v, **ctx.options)
            grads = torch.autograd.grad(out, (q, k, v), grad)
        return grads + (None, None, None, None)


_SDPA = getattr(F, "scaled_dot_product_attention", None)


def gpu_runs_math_attention(q, k, v, attn_mask, enable_gqa):
    """Whether a CUDA GPU runs this attention on PyTorch's math path (torch
    2.5-2.11, sm80 and later):
    - an operand or mask whose last dimension is not contiguous: every fused
      GPU kernel needs stride 1 there (the CPU's do not). T5's position bias
      is such a mask (a permuted embedding): an H200 ran its self-attention
      on the math path, keeping the softmax weights (sdpa_choice.py, session 21);
    - grouped-query attention (fewer key heads than query heads) in float32
      or with a mask: flash attention takes only fp16 and bf16 and no mask,
      memory-efficient attention no head groups. An H200 allocator trace of a
      Llama-style model in float32 shows the weights the math path keeps.
    Under autocast the GPU casts the operands to the autocast type first (CUDA
    autocast lists scaled_dot_product_attention; the CPU's does not, so a
    float32 query here, after a float32 rotary embedding, is bf16 there); a
    cast keeps the mask's strides."""
    if any(t.stride(-1) != 1 and t.size(-1) != 1 for t in (q, k, v)):  # a head size of 1 is exempt
        return True
    if attn_mask is not None and attn_mask.dim() > 0 and attn_mask.stride(-1) != 1:
        return True
    dtype = torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else q.dtype
    return bool(enable_gqa) and k.size(-3) != q.size(-3) and (dtype == torch.float32 or attn_mask is not None)


def math_attention(q, k, v, attn_mask, dropout_p, is_causal, scale):
    """Attention as ATen's math path computes it on a GPU, op by op, so that
    the recorded graph keeps what it keeps: both scaled operands, the softmax
    weights and the repeated values. Half-precision inputs are computed in
    float32, as the math path does by default, below autocast."""
    out_dtype = torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else q.dtype
    with torch.autocast("cpu", enabled=False):
        return _math_attention_float(q, k, v, attn_mask, dropout_p, is_causal, scale).to(out_dtype)


def _math_attention_float(q, k, v, attn_mask, dropout_p, is_causal, scale):
    q, k, v = q.float(), k.float(), v.float()
    k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
    v = v.repeat_interleave(q.size(-3) // v.size(-3), -3)
    factor = (scale if scale is not None else q.size(-1) ** -0.5) ** 0.5
    if is_causal:
        attn_mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        attn_mask = torch.zeros(attn_mask.shape, dtype=q.dtype, device=q.device).masked_fill(~attn_mask, float("-inf"))
    weights = torch.matmul(q * factor, k.transpose(-2, -1) * factor)
    if attn_mask is not None:
        weights = weights + attn_mask.to(weights.dtype)
    weights = torch.softmax(weights, -1)
    if dropout_p > 0:
        weights = F.dropout(weights, dropout_p)
    return torch.matmul(weights, v)


def fused_attention(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False,
                     **kwargs):
    """F.scaled_dot_product_attention as the GPU would run this call: the math
    path op by op where gpu_runs_math_attention says so, else a fused kernel
    that keeps query, key, value and output (the CPU's own call where nothing
    needs a gradient or it takes arguments the fused stand-in does not)."""
    if gpu_runs_math_attention(q, k, v, attn_mask, enable_gqa):
        return math_attention(q, k, v, attn_mask, dropout_p, is_causal, scale)
    if enable_gqa:
        kwargs["enable_gqa"] = True
    if kwargs or not (q.requires_grad or k.requires_grad or v.requires_grad):
        return _SDPA(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                     **({"scale": scale} if scale is not None else {}), **kwargs)
    return ScaledDotProductEfficientAttention.apply(q, k, v, attn_mask, dropout_p, is_causal, scale)


@contextlib.contextmanager
def attention_as_on_gpu():
    """F.scaled_dot_product_attention recorded as the GPU runs it (torch 2.x; a no-op on 1.13)."""
    if _SDPA is None:
        yield
        return
    F.scaled_dot_product_attention = fused_attention
    try:
        yield
    finally:
        F.scaled_dot_product_attention = _SDPA


_DROPOUT = F.dropout


def native_dropout(input, p=0.5, training=True, inplace=False):
    """F.dropout as the GPU runs it in training: torch.native_dropout, whose
    mask is one byte an element (the others as F.dropout)."""
    if not training or p == 0 or inplace or not input.is_floating_point():
        return _DROPOUT(input, p, training, inplace)
    return torch.native_dropout(input, p, True)[0]


@contextlib.contextmanager
def dropout_as_on_gpu():
    """F.dropout (nn.Dropout's too) as the GPU runs it: its mask one byte an
    element, kept for backward when the input needs a gradient. The CPU's
    dropout multiplies by a float32 noise tensor and keeps that, four times
    the GPU's mask: a LoRA model's untracked forward counted each adapter's
    dropout so."""
    F.dropout = native_dropout
    try:
        yield
    finally:
        F.dropout = _DROPOUT


_FLOAT32_UNDER_AUTOCAST = {"layer_norm", "group_norm"}     # CUDA autocast casts their inputs to float32
_FLOAT32_RESULT_UNDER_AUTOCAST = {"softmax", "log_softmax"}  # CUDA autocast gives them dtype=float32


@contextlib.contextmanager
def autocast_as_on_gpu(dtype):
    """torch.autocast on the CPU in `dtype`, with CUDA autocast's policy for
    the ops where the CPU's differs: on a GPU layer_norm and group_norm run in
    float32 (their bf16/fp16 inputs cast, the result float32) and softmax and
    log_softmax give float32; the CPU keeps all four in `dtype`, which made a
    transformer's normalised activations half their size on the GPU (and
    LayerNorm under bf16 fail on torch 1.13's CPU)."""
    from torch.overrides import TorchFunctionMode

    low = (torch.bfloat16, torch.float16)

    def to_float32(value):
        return value.float() if isinstance(value, torch.Tensor) and value.dtype in low else value

    class AsOnGpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if not torch.is_autocast_cpu_enabled() or not args or not isinstance(args[0], torch.Tensor):
                return func(*args, **kwargs)
            if name in _FLOAT32_UNDER_AUTOCAST:
                with torch.autocast("cpu", enabled=False):
                    return func(*[to_float32(a) for a in args], **{k: to_float32(v) for k, v in kwargs.items()})
            if (name in _FLOAT32_RESULT_UNDER_AUTOCAST and args[0].dtype in low and kwargs.get("dtype") is None
                    and not any(isinstance(a, torch.dtype) for a in args[1:])):
                with torch.autocast("cpu", enabled=False):
                    return func(*args, **dict(kwargs, dtype=torch.float32))
            return func(*args, **kwargs)

    with torch.autocast("cpu", dtype=dtype), AsOnGpu():
        yield


@functools.lru_cache(maxsize=None)
def cpu_runs_float16():
    """Whether this torch's CPU kernels multiply float16 matrices (1.13's do not)."""
    try:
        a = torch.ones(2, 2, dtype=torch.float16)
        torch.addmm(a, a, a)
        return True
    except RuntimeError:
        return False


@functools.lru_cache(maxsize=None)
def cpu_autocast_float16():
    """The dtype that stands in for float16 under CPU autocast: float16 where
    CPU autocast takes it, else bfloat16 (1.13's takes only bfloat16), whose
    element is as large."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with torch.autocast("cpu", dtype=torch.float16):
                enabled = torch.is_autocast_cpu_enabled()
        if enabled and cpu_runs_float16():
            return torch.float16
    except RuntimeError:
        pass
    return torch.bfloat16


@contextlib.contextmanager
def float16_recorded_as(model, dtype):
    """The model's float16 parameters and buffers as `dtype` while recording,
    then the very tensors they were (values, gradients and identities kept,
    so an optimizer built on them still holds them)."""
    if dtype == torch.float16:
        yield
        return
    swapped_data, swapped_buffers, seen = [], [], set()
    try:
        for module in model.modules():
            for p in module._parameters.values():
                if p is None or id(p) in seen or p.dtype != torch.float16:
                    continue
                seen.add(id(p))
                swapped_data.append((p, p.data, p.grad))
                p.grad = None
                p.data = p.data.to(dtype)
            for name, b in module._buffers.items():
                if b is not None and b.dtype == torch.float16:
                    swapped_buffers.append((module, name, b))
                    module._buffers[name] = b.to(dtype)
        yield
    finally:
        for p, data, grad in swapped_data:
            p.data = data
            p.grad = grad
        for module, name, b in swapped_buffers:
            module._buffers[name] = b
