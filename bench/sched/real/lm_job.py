"""A user's plain PyTorch language model, as the scheduler trace runs it: a
GPT-style decoder (token and position embeddings, pre-norm causal
nn.TransformerEncoder layers, linear head) trained byte-level on real text,
the Python sources of the installed torch package, for a fixed number of
steps. Prints its throughput and final loss.

    python3 lm_job.py --layers 6 --d 384 --heads 6 --seq 256 --batch 32 --opt adamw --steps 400
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyGpt(nn.Module):
    """Decoder-only transformer over bytes (vocab 256)."""

    def __init__(self, layers=4, d=256, heads=4, seq=256, vocab=256):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(seq, d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1), persistent=False)

    def forward(self, ids):
        t = ids.shape[1]
        h = self.tokens(ids) + self.positions(torch.arange(t, device=ids.device))
        h = self.blocks(h, mask=self.mask[:t, :t])
        return self.head(self.norm(h))


def corpus(limit_bytes=16 << 20):
    """Bytes of the torch package's .py files, up to `limit_bytes`, as uint8."""
    root = os.path.dirname(torch.__file__)
    chunks, total = [], 0
    for directory, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(".py") and total < limit_bytes:
                with open(os.path.join(directory, name), "rb") as f:
                    data = f.read()
                chunks.append(data)
                total += len(data)
    return torch.frombuffer(bytearray(b"".join(chunks)[:limit_bytes]), dtype=torch.uint8)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--opt", choices=["adam", "adamw", "sgd"], default="adamw")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    index = int(os.environ.get("COLO_ARRAY_INDEX", "-1"))  # a colo job array: the index is the seed
    torch.manual_seed(args.seed if index < 0 else index)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    text = corpus().to(device)
    model = TinyGpt(args.layers, args.d, args.heads, args.seq).to(device)
    if args.opt == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        opt = getattr(torch.optim, "AdamW" if args.opt == "adamw" else "Adam")(model.parameters(), lr=6e-4)
    offsets = torch.arange(args.seq + 1, device=device)
    start = time.time()
    for step in range(args.steps):
        begin = torch.randint(0, text.numel() - args.seq - 1, (args.batch, 1), device=device)
        window = text[begin + offsets].long()
        logits = model(window[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), window[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    final = loss.item()
    elapsed = time.time() - start
    print(f"gpt {args.layers}x{args.d} seq {args.seq} batch {args.batch} {args.opt}: {args.steps} steps in "
          f"{elapsed:.1f} s, {args.steps * args.batch / elapsed:.0f} samples/s, loss {final:.3f}", flush=True)


if __name__ == "__main__":
    main()
