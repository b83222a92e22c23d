"""Fused attention: nn.MultiheadAttention, nn.TransformerEncoderLayer and
nn.TransformerEncoder of N models, on model-major tensors. Masks are plain
(the same for every model)."""
import math

import torch
import torch.nn.functional as F

from colo.fuse.layers import FusedDropout, FusedLayer, FusedLayerNorm, FusedLinear, model_major_linear
from colo.fuse.layout import MODEL_MAJOR
from colo.fuse.stacking import FuseError

_sdpa = getattr(F, "scaled_dot_product_attention", None)


def _additive_mask(attn_mask, key_padding_mask, n, batch, heads, dtype):
    """One float mask [N*B, H or 1, L or 1, S] from nn.MultiheadAttention's two
    masks (bool True or -inf: may not attend), or None."""
    mask = None
    if attn_mask is not None:
        m = attn_mask if attn_mask.dtype != torch.bool else \
            torch.zeros_like(attn_mask, dtype=dtype).masked_fill(attn_mask, float("-inf"))
        if m.dim() == 2:
            mask = m.view(1, 1, *m.shape)
        else:  # [B*H, L, S]
            mask = m.view(batch, heads, *m.shape[1:]).repeat(n, 1, 1, 1)
    if key_padding_mask is not None:
        k = key_padding_mask if key_padding_mask.dtype != torch.bool else \
            torch.zeros_like(key_padding_mask, dtype=dtype).masked_fill(key_padding_mask, float("-inf"))
        k = k.view(batch, 1, 1, k.shape[-1]).repeat(n, 1, 1, 1)
        mask = k if mask is None else mask + k
    return mask


class FusedMultiheadAttention(FusedLayer):
    """nn.MultiheadAttention of N models: per-model projections as batched
    GEMMs and one attention over the N*B sequences."""
    tensor_args = ("query", "key", "value")
    gives = (MODEL_MAJOR, MODEL_MAJOR)

    def __init__(self, modules, where):
        m = modules[0]
        for i, other in enumerate(modules):
            settings = lambda a: (a.embed_dim, a.num_heads, a.batch_first, a.dropout, a.kdim, a.vdim)  # noqa: E731
            if settings(other) != settings(m):
                raise FuseError(f"colo.fuse: attention '{where}' differs between models 0 and {i} "
                                f"(embed_dim, heads, batch_first, dropout, kdim, vdim): {settings(m)} vs {settings(other)}")
        if m.bias_k is not None or m.add_zero_attn:
            raise FuseError(f"colo.fuse: attention '{where}' uses add_bias_kv or add_zero_attn, "
                            "which colo.fuse does not support")
        super().__init__(modules, where)
        self.out_proj = FusedLinear([x.out_proj for x in modules], f"{where}.out_proj")
        self.embed_dim, self.heads, self.batch_first = m.embed_dim, m.num_heads, m.batch_first
        self.attention_dropout = m.dropout
        self.same_dim = m._qkv_same_embed_dim

    def _projections(self, query, key, value):
        e = self.embed_dim
        bias = self.in_proj_bias
        part = (lambda i: None if bias is None else bias[:, i * e:(i + 1) * e])
        if self.same_dim:
            if query is key and key is value:
                return model_major_linear(query, self.in_proj_weight, bias).chunk(3, dim=-1)
            w = self.in_proj_weight
            weights = (w[:, :e], w[:, e:2 * e], w[:, 2 * e:])
        else:
            weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return tuple(model_major_linear(x, w, part(i)) for i, (x, w) in enumerate(zip((query, key, value), weights)))

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        if not self.batch_first:  # [N, L, B, E] -> [N, B, L, E], keeping self-attention's one input
            same = query is key and key is value
            query = query.transpose(1, 2)
            key = query if same else key.transpose(1, 2)
            value = query if same else value.transpose(1, 2)
        n, batch, length, _ = query.shape
        heads, head_dim = self.heads, self.embed_dim // self.heads
        q, k, v = self._projections(query, key, value)
        split = (lambda t: t.reshape(n * batch, t.shape[2], heads, head_dim).transpose(1, 2))
        q, k, v = split(q), split(k), split(v)
        if is_causal and attn_mask is None:
            s = k.shape[2]
            attn_mask = torch.ones(length, s, dtype=torch.bool, device=q.device).triu(1)
        mask = _additive_mask(attn_mask, key_padding_mask, n, batch, heads, q.dtype)
        dropout = self.attention_dropout if self.training else 0.0
        weights = None
        if _sdpa is not None and not need_weights:
            out = _sdpa(q, k, v, attn_mask=mask, dropout_p=dropout)
        else:
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(head_dim)
            if mask is not None:
                scores = scores + mask
            attention = torch.softmax(scores, dim=-1)
            if need_weights:
                weights = attention.view(n, batch, heads, length, -1)
                weights = weights.mean(2) if average_attn_weights else weights
            out = torch.matmul(F.dropout(attention, dropout, self.training), v)
        out = out.transpose(1, 2).reshape(n, batch, length, self.embed_dim)
        out = self.out_proj(out, MODEL_MAJOR)
        return (out if self.batch_first else out.transpose(1, 2)), weights


def _activation(layer, where):
    act = layer.activation
    if isinstance(act, str):
        return F.relu if act == "relu" else F.gelu
    if isinstance(act, torch.nn.Module) and any(True for _ in act.parameters()):
        raise FuseError(f"colo.fuse: the activation of '{where}' has parameters, which colo.fuse does not support")
    return act


class FusedTransformerEncoderLayer(FusedLayer):
    """nn.TransformerEncoderLayer of N models (post- or pre-norm, ReLU or
    GELU), with per-model dropout rates."""
    tensor_args = ("src",)

    def __init__(self, modules, where):
        super().__init__(modules, where)
        m = modules[0]
        sub = (lambda name, cls: cls([getattr(x, name) for x in modules], f"{where}.{name}"))
        self.self_attn = sub("self_attn", FusedMultiheadAttention)
        self.linear1, self.linear2 = sub("linear1", FusedLinear), sub("linear2", FusedLinear)
        self.norm1, self.norm2 = sub("norm1", FusedLayerNorm), sub("norm2", FusedLayerNorm)
        rates = (lambda name: FusedDropout([getattr(x, name).p for x in modules]))
        self.dropout, self.dropout1, self.dropout2 = rates("dropout"), rates("dropout1"), rates("dropout2")
        self.activation = _activation(m, where)
        self.norm_first = m.norm_first

    def _attention(self, x, mask, padding):
        y = self.self_attn(x, x, x, key_padding_mask=padding, need_weights=False, attn_mask=mask)[0]
        return self.dropout1(y, MODEL_MAJOR)

    def _feed_forward(self, x):
        y = self.linear1(x, MODEL_MAJOR)
        y = self.linear2(self.dropout(self.activation(y), MODEL_MAJOR), MODEL_MAJOR)
        return self.dropout2(y, MODEL_MAJOR)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        if is_causal and src_mask is None:
            length = src.shape[2] if self.self_attn.batch_first else src.shape[1]
            src_mask = torch.ones(length, length, dtype=torch.bool, device=src.device).triu(1)
        x = src
        if self.norm_first:
            x = x + self._attention(self.norm1(x, MODEL_MAJOR), src_mask, src_key_padding_mask)
            return x + self._feed_forward(self.norm2(x, MODEL_MAJOR))
        x = self.norm1(x + self._attention(x, src_mask, src_key_padding_mask), MODEL_MAJOR)
        return self.norm2(x + self._feed_forward(x), MODEL_MAJOR)


class FusedTransformerEncoder(FusedLayer):
    """nn.TransformerEncoder of N models: its fused layers in turn, then its
    final norm if it has one."""
    tensor_args = ("src",)

    def __init__(self, modules, where):
        super().__init__(modules, where)
        count = len(modules[0].layers)
        self.layers = torch.nn.ModuleList(
            FusedTransformerEncoderLayer([m.layers[j] for m in modules], f"{where}.layers.{j}") for j in range(count))
        norms = [m.norm for m in modules]
        self.norm = None if norms[0] is None else FusedLayerNorm(norms, f"{where}.norm")

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return x if self.norm is None else self.norm(x, MODEL_MAJOR)


# Layers that take several inputs by name; the rewriter converts their
# `tensor_args` to model-major and passes the rest (masks, flags) as they are.
MULTI_INPUT_LAYERS = (FusedMultiheadAttention, FusedTransformerEncoderLayer, FusedTransformerEncoder)
