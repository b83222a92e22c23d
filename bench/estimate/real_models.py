"""colo.estimate against what real PyTorch training processes take on a GPU.

    PYTHONPATH=BUILD/python python3 bench/estimate/real_models.py run --out DIR [--rows A-B] [--parallel 2]
    python3 bench/estimate/real_models.py summarize DIR/rows.jsonl [more.jsonl ...] --out DIR
    PYTHONPATH=BUILD/python python3 bench/estimate/real_models.py reestimate ROWS.jsonl [...] --out NEW.jsonl

`reestimate` recomputes colo's estimate of rows already measured (their truth
kept) with the colo built here, on this CPU: for developing the estimator
without a GPU. Rows whose model cannot be built here (no transformers) are
left out. Committed results come from `run`, estimate and truth in one run.

Rows: torchvision classification models (ResNet, MobileNet, EfficientNet,
VGG, DenseNet, ConvNeXt, ViT, Inception), a GPT-2-style decoder and a BERT
encoder built from Hugging Face configs, a GPT-style decoder in plain PyTorch
and a custom module with functional code; each at two batch sizes with SGD
(momentum 0.9) and Adam. For each row:

  truth       the peak GPU footprint NVML shows for the training process
              itself (nvidia-smi --query-compute-apps, this pid), sampled every
              0.2 s and after 4 training steps of a fresh process;
  colo        colo.estimate (the analytical estimator, on the CPU), told
              keep_output=False: the truth loop is loss = loss_of(model(x));
  fake        what a user could try instead: one training step traced under
              FakeTensorMode with torch's MemTracker (torch.distributed._tools),
              as returned (tensor bytes; no context, no allocator);
  horus       a parameter-count rule in the manner of Horus: parameters,
              gradients and optimiser state by count, plus the batch times
              the output sizes of every leaf module, plus the same CUDA context
              colo adds;
  learned     colo's learned estimator on the model's summary.
Errors are relative to truth: (estimate - truth) / truth.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

LEARNED = os.path.join(os.path.dirname(__file__), "..", "results", "estimate", "learned.pt")
CONTEXT_BYTES = 794820608  # the reference profile's CUDA context (src/colo/estimate/device_profile.cpp)


class PlainGpt(nn.Module):
    """A GPT-style decoder in plain PyTorch (pre-norm, causal mask, tied head)."""

    def __init__(self, vocab=8000, context=256, width=512, heads=8, layers=6):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Parameter(torch.zeros(context, width))
        block = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.blocks = nn.TransformerEncoder(block, layers)
        self.norm = nn.LayerNorm(width)
        self.register_buffer("causal", torch.triu(torch.full((context, context), float("-inf")), diagonal=1))

    def forward(self, ids):
        n = ids.shape[1]
        x = self.blocks(self.tokens(ids) + self.positions[:n], mask=self.causal[:n, :n])
        return self.norm(x) @ self.tokens.weight.t()


class SqueezeExciteNet(nn.Module):
    """A custom CNN with functional code: squeeze-and-excitation gates, residuals."""

    def __init__(self, width=64, classes=100):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1)
        self.convs = nn.ModuleList(nn.Conv2d(width, width, 3, padding=1) for _ in range(4))
        self.gates = nn.ModuleList(nn.Linear(width, width) for _ in range(4))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        for conv, gate in zip(self.convs, self.gates):
            y = F.gelu(conv(x))
            g = torch.sigmoid(gate(y.mean((2, 3))))[:, :, None, None]
            x = x + y * g
        return self.head(x.mean((2, 3)))


def torchvision_model(name):
    import torchvision
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=False)
    return getattr(torchvision.models, name)(weights=None)


def hf_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(n_layer=6, n_embd=512, n_head=8, n_positions=256, vocab_size=16000))


def hf_bert():
    from transformers import BertConfig, BertForSequenceClassification
    return BertForSequenceClassification(BertConfig(num_hidden_layers=6, hidden_size=512, num_attention_heads=8,
                                                    intermediate_size=2048, vocab_size=16000, num_labels=4))


# name -> (family, builder, one example input at batch 1, batch sizes)
MODELS = {
    "resnet18": ("resnet", lambda: torchvision_model("resnet18"), lambda: torch.randn(1, 3, 224, 224), (32, 96)),
    "resnet50": ("resnet", lambda: torchvision_model("resnet50"), lambda: torch.randn(1, 3, 224, 224), (32, 96)),
    "mobilenet_v3_large": ("mobilenet", lambda: torchvision_model("mobilenet_v3_large"),
                           lambda: torch.randn(1, 3, 224, 224), (32, 96)),
    "efficientnet_b0": ("efficientnet", lambda: torchvision_model("efficientnet_b0"),
                        lambda: torch.randn(1, 3, 224, 224), (32, 96)),
    "vgg16": ("vgg", lambda: torchvision_model("vgg16"), lambda: torch.randn(1, 3, 224, 224), (32, 64)),
    "densenet121": ("densenet", lambda: torchvision_model("densenet121"), lambda: torch.randn(1, 3, 224, 224),
                    (32, 96)),
    "convnext_tiny": ("convnext", lambda: torchvision_model("convnext_tiny"), lambda: torch.randn(1, 3, 224, 224),
                      (32, 64)),
    "vit_b_16": ("vit", lambda: torchvision_model("vit_b_16"), lambda: torch.randn(1, 3, 224, 224), (32, 64)),
    "inception_v3": ("inception", lambda: torchvision_model("inception_v3"), lambda: torch.randn(1, 3, 299, 299),
                     (32, 64)),
    "hf_gpt2": ("gpt2", hf_gpt2, lambda: torch.randint(0, 16000, (1, 256)), (8, 32)),
    "hf_bert": ("bert", hf_bert, lambda: torch.randint(0, 16000, (1, 128)), (16, 64)),
    "plain_gpt": ("gpt-plain", PlainGpt, lambda: torch.randint(0, 8000, (1, 256)), (8, 32)),
    "se_cnn": ("custom", SqueezeExciteNet, lambda: torch.randn(1, 3, 64, 64), (64, 256)),
}


def all_rows():
    rows = []
    for name, (family, _, _, batches) in MODELS.items():
        for batch in batches:
            for optimizer in ("sgd", "adam"):
                rows.append({"model": name, "family": family, "batch": batch, "optimizer": optimizer})
    return rows


def make_optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01, momentum=0.9)
    return torch.optim.Adam(params, lr=1e-4)


def loss_of(output):
    from colo.estimate import cross_entropy_loss
    return cross_entropy_loss(output)


def nvml_footprint(pid):
    """Bytes NVML shows for process `pid` (0 when it is not listed)."""
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid):
            return int(parts[1]) * 2**20
    return 0


def gpu_training(row):
    """The row's model in training mode on the GPU, its optimiser and one batch."""
    torch.manual_seed(0)
    _, build, example, _ = MODELS[row["model"]]
    model = build().cuda().train()
    opt = make_optimizer(row["optimizer"], model.parameters())
    one = example()
    x = one.expand(row["batch"], *one.shape[1:]).contiguous().cuda()
    if not x.is_floating_point():
        x = torch.randint(0, int(one.max()) + 1, x.shape, device="cuda")
    return model, opt, x


def print_truth(train):
    """Runs train() on the GPU while sampling this process's NVML footprint
    every 0.2 s and at the end; prints the truth record as one JSON line."""
    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], nvml_footprint(os.getpid()))
            stop.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.time()
    train()
    torch.cuda.synchronize()
    stop.set()
    sampler.join()
    peak[0] = max(peak[0], nvml_footprint(os.getpid()))
    print(json.dumps({"truth_bytes": peak[0], "max_reserved": torch.cuda.max_memory_reserved(),
                      "max_allocated": torch.cuda.max_memory_allocated(), "train_s": time.time() - start}))


def plain_steps(row, steps):
    """() -> None training the row's model (made now, on the GPU) for `steps` plain steps."""
    model, opt, x = gpu_training(row)

    def train():
        for _ in range(steps):
            loss = loss_of(model(x))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return train


def truth(row):
    """Child process: train the row's model for 4 steps on the GPU; print its NVML peak."""
    print_truth(plain_steps(row, 4))


def fake_tensor_peak(row):
    """One training step under FakeTensorMode, measured by torch's MemTracker (torch 2.x)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.mem_tracker import MemTracker
    _, build, example, _ = MODELS[row["model"]]
    # Built straight on the (fake) GPU: moving a fake module with .cuda() fails in torch 2.11.
    with FakeTensorMode(), torch.device("cuda"):
        model = build().train()
        opt = make_optimizer(row["optimizer"], model.parameters())
        one = example()
        x = one.expand(row["batch"], *one.shape[1:]).contiguous()
        tracker = MemTracker()
        tracker.track_external(model, opt)
        with tracker:  # one step: MemTracker refuses iterated calls
            loss = loss_of(model(x))
            loss.backward()
            opt.step()
        snapshot = tracker.get_tracker_snapshot("peak")
    return int(max(v["Total"] for k, v in snapshot.items() if str(k).startswith("cuda")))


def horus_rule(model, example, row):
    """Parameters, gradients, optimiser state by count; the batch times every leaf module's output."""
    params = sum(p.numel() for p in model.parameters() if p.requires_grad) * 4
    state = 1 if row["optimizer"] == "sgd" else 2
    per_sample = [0]

    def hook(_module, _inputs, output):
        outputs = output if isinstance(output, (tuple, list)) else (output,)
        for o in outputs:
            if isinstance(o, torch.Tensor):
                per_sample[0] += o.numel() // max(o.shape[0], 1) * o.element_size() if o.dim() else 0

    handles = [m.register_forward_hook(hook) for m in model.modules() if not list(m.children())]
    with torch.no_grad():
        model(example)
    for h in handles:
        h.remove()
    return params * (2 + state) + per_sample[0] * row["batch"] + CONTEXT_BYTES


def estimates(row):
    import colo
    torch.manual_seed(0)
    _, build, example, _ = MODELS[row["model"]]
    model = build()
    one = example()
    start = time.time()
    e = colo.estimate(model, one, batch_size=row["batch"], optimizer=row["optimizer"], learned=LEARNED,
                      keep_output=False)
    out = {"colo_bytes": e.bytes, "colo_s": time.time() - start, "colo_phase": e.peak_phase,
           "colo_unmodelled": e.unmodelled_ops, "colo_breakdown": e.breakdown, "learned_bytes": e.learned_bytes,
           "parameters": e.parameter_count}
    model.eval()
    out["horus_bytes"] = horus_rule(model, one, row)
    try:
        out["fake_bytes"] = fake_tensor_peak(row)
    except Exception as exc:  # the peer fails on some models; the row says how
        out["fake_bytes"], out["fake_error"] = None, f"{type(exc).__name__}: {str(exc)[:200]}"
    return out


def colo_estimate(row):
    import colo
    torch.manual_seed(0)
    _, build, example, _ = MODELS[row["model"]]
    start = time.time()
    e = colo.estimate(build(), example(), batch_size=row["batch"], optimizer=row["optimizer"], keep_output=False)
    return {"colo_bytes": e.bytes, "colo_s": time.time() - start, "colo_phase": e.peak_phase,
            "colo_unmodelled": e.unmodelled_ops, "colo_breakdown": e.breakdown}


def reestimate(args):
    rows = {}
    for path in args.rows:
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                rows[(r["model"], r["batch"], r["optimizer"])] = r
    if args.only:
        rows = {k: r for k, r in rows.items() if r["model"] in args.only.split(",")}
    with open(args.out, "w") as out:
        for r in rows.values():
            try:
                new = colo_estimate(r)
            except ImportError as exc:
                print(f"{r['model']}: left out ({exc})", flush=True)
                continue
            old = r["colo_bytes"]
            r = dict(r, **new, colo_from=f"reestimate, torch {torch.__version__}")
            out.write(json.dumps(r) + "\n")
            truth_bytes = r["truth_bytes"]
            print(f"{r['model']} b{r['batch']} {r['optimizer']}: truth {truth_bytes / 2**30:.2f} GiB colo "
                  f"{r['colo_bytes'] / 2**30:.2f} GiB ({100 * (r['colo_bytes'] - truth_bytes) / truth_bytes:+.1f}%, was "
                  f"{100 * (old - truth_bytes) / truth_bytes:+.1f}%) peak in {r['colo_phase']}", flush=True)


def run(args):
    os.makedirs(args.out, exist_ok=True)
    rows = all_rows()
    if args.rows:
        first, last = (int(v) for v in args.rows.split("-"))
        rows = rows[first:last + 1]
    path = os.path.join(args.out, "rows.jsonl")
    pending = list(enumerate(rows))
    running = []
    with open(path, "a") as out:
        while pending or running:
            while pending and len(running) < args.parallel:
                i, row = pending.pop(0)
                child = subprocess.Popen([sys.executable, __file__, "truth", json.dumps(row)],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                running.append((i, row, child, estimates(row)))
            i, row, child, est = running.pop(0)
            stdout, stderr = child.communicate()
            record = dict(row, **est)
            try:
                record.update(json.loads(stdout.strip().splitlines()[-1]))
            except (ValueError, IndexError):
                record["truth_error"] = stderr[-400:]
            out.write(json.dumps(record) + "\n")
            out.flush()
            err = (record["colo_bytes"] - record["truth_bytes"]) / record["truth_bytes"] \
                if record.get("truth_bytes") else float("nan")
            print(f"[{i}] {row['model']} b{row['batch']} {row['optimizer']}: truth "
                  f"{record.get('truth_bytes', 0) / 2**30:.2f} GiB colo {record['colo_bytes'] / 2**30:.2f} GiB "
                  f"({100 * err:+.1f}%) in {record['colo_s']:.1f} s", flush=True)


def errors(records, key):
    return [(r[key] - r["truth_bytes"]) / r["truth_bytes"] for r in records if r.get(key)]


def stats(errs, n_rows):
    if not errs:
        return {"rows": 0}
    absolute = sorted(abs(e) for e in errs)
    return {"rows": len(errs), "of_rows": n_rows, "median_pct": 100 * statistics.median(absolute),
            "p95_pct": 100 * absolute[min(len(absolute) - 1, int(round(0.95 * (len(absolute) - 1))))],
            "under10_pct": 100 * sum(e < -0.10 for e in errs) / len(errs)}


def summarize(args):
    by_row = {}  # a later file's row supersedes an earlier one's (a re-run with newer code)
    for path in args.rows:
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                by_row[(r["model"], r["batch"], r["optimizer"])] = dict(r, source=os.path.basename(path))
    records = [r for r in by_row.values() if r.get("truth_bytes")]
    summary = {"rows": len(records), "models": len({r["model"] for r in records}),
               **stats(errors(records, "colo_bytes"), len(records)),
               "peers": {name: stats(errors(records, key), len(records))
                         for name, key in (("fake_tensor_memtracker", "fake_bytes"), ("horus_rule", "horus_bytes"),
                                           ("learned", "learned_bytes"))},
               "per_family": {f: stats(errors([r for r in records if r["family"] == f], "colo_bytes"),
                                       sum(r["family"] == f for r in records))
                              for f in sorted({r["family"] for r in records})},
               "colo_seconds_max": max(r["colo_s"] for r in records),
               "truth": "peak NVML footprint of the training process (nvidia-smi --query-compute-apps), 4 steps",
               "command": args.command}
    del summary["of_rows"]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary, indent=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--rows", default="", help="FIRST-LAST of the row list")
    r.add_argument("--parallel", type=int, default=2, help="truth processes at once on the GPU")
    t = sub.add_parser("truth")
    t.add_argument("row")
    s = sub.add_parser("summarize")
    s.add_argument("rows", nargs="+")
    s.add_argument("--out", required=True)
    s.add_argument("--command", default="bench/gpu/run.sh realmodels")
    e = sub.add_parser("reestimate")
    e.add_argument("rows", nargs="+")
    e.add_argument("--out", required=True)
    e.add_argument("--only", default="", help="comma-separated model names")
    args = parser.parse_args()
    if args.verb == "run":
        run(args)
    elif args.verb == "reestimate":
        reestimate(args)
    elif args.verb == "truth":
        truth(json.loads(args.row))
    else:
        summarize(args)


if __name__ == "__main__":
    main()
