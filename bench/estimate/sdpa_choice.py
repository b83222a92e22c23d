"""Which kernel a CUDA GPU picks for each scaled_dot_product_attention call
of real_training.py rows, and why it refuses the fused ones (issue 50: the T5
rows keep the math path's softmax weights on an H200, and colo did not know
why). GPU machine only:

    python3 bench/estimate/sdpa_choice.py SETUP:MODEL:BATCH:OPTIMIZER [...] > choices.jsonl

One JSON line per distinct call of a row (first optimiser step only): the
operands' shapes, dtypes, strides and whether they need grad, the mask's,
dropout_p, is_causal, enable_gqa, the chosen backend, and for each fused
backend PyTorch's own reasons for refusing it (can_use_* with debug=True)."""
import json
import os
import sys
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import real_training  # noqa: E402

BACKENDS = {0: "math", 1: "flash", 2: "efficient", 3: "cudnn", 4: "overrideable"}


def describe(t):
    if t is None:
        return None
    return {"shape": list(t.shape), "dtype": str(t.dtype), "stride": list(t.stride()), "grad": t.requires_grad}


def refusals(q, k, v, mask, dropout_p, is_causal, enable_gqa):
    """{backend: [PyTorch's warnings]} for each fused backend it would refuse."""
    params = torch.backends.cuda.SDPAParams(q, k, v, mask, dropout_p, is_causal, enable_gqa)
    out = {}
    for name in ("flash", "efficient", "cudnn"):
        check = getattr(torch.backends.cuda, f"can_use_{name}_attention", None)
        if check is None:
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ok = check(params, True)
        out[name] = "usable" if ok else [str(w.message)[:300] for w in caught]
    return out


def probe(row_key):
    setup, model, batch, optimizer = row_key.split(":")
    row = next(r for r in real_training.all_rows() if (r["setup"], r["model"], r["batch"], r["optimizer"])
               == (setup, model, int(batch), optimizer))
    seen, original = {}, F.scaled_dot_product_attention

    def hooked(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        dtype = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else q.dtype
        qc, kc, vc = (t.to(dtype) for t in (q, k, v))
        mc = attn_mask.to(dtype) if attn_mask is not None and attn_mask.is_floating_point() else attn_mask
        key = json.dumps([describe(t) for t in (qc, kc, vc, mc)] + [dropout_p, is_causal, enable_gqa])
        if key not in seen:
            chosen = torch._fused_sdp_choice(qc, kc, vc, mc, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
            seen[key] = {"row": row_key, "q": describe(qc), "k": describe(kc), "mask": describe(mc),
                         "dropout_p": dropout_p, "is_causal": is_causal, "enable_gqa": enable_gqa,
                         "chosen": BACKENDS.get(int(chosen), int(chosen)),
                         "refused": refusals(qc, kc, vc, mc, dropout_p, is_causal, enable_gqa), "calls": 0}
        seen[key]["calls"] += 1
        return original(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale,
                        enable_gqa=enable_gqa)

    F.scaled_dot_product_attention = hooked
    try:
        real_training.setups.gpu_loop(row, real_training.MODELS)()
    finally:
        F.scaled_dot_product_attention = original
    if not seen:
        print(json.dumps({"row": row_key, "calls": 0, "note": "no scaled_dot_product_attention call"}))
    for record in seen.values():
        print(json.dumps(record), flush=True)


def main():
    if not torch.cuda.is_available():
        sys.exit("sdpa_choice.py: no CUDA GPU here")
    for row_key in sys.argv[1:]:
        probe(row_key)


if __name__ == "__main__":
    main()
