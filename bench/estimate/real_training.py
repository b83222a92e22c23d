"""colo.estimate against real training processes: issue 50's validation set.

    PYTHONPATH=BUILD/python python3 bench/estimate/real_training.py run --out DIR [--parallel 4] [--only NAME,...]
    python3 bench/estimate/real_training.py summarize DIR/rows.jsonl [MORE.jsonl ...] --out DIR --gpu NAME [--gpu NAME ...]
    PYTHONPATH=BUILD/python python3 bench/estimate/real_training.py check [--estimate --out ROWS.jsonl] [--only NAME,...]
    PYTHONPATH=BUILD/python python3 bench/estimate/real_training.py recheck --truth ROWS.jsonl --out DIR \
        [--gpu h200] [--foreach]

31 architectures, 116 rows: torchvision CNNs and vision transformers, timm
models (pretrained=False), Hugging Face causal LMs, encoders and an
encoder-decoder built from configs (nothing is downloaded), and three custom
modules; each row one of issue 50's set-ups (plain fp32, a frozen backbone,
the last blocks trainable, LoRA, bf16 and fp16 autocast, pure bf16, gradient
accumulation, zero_grad(set_to_none=False), `out = model(x)`, gradient
checkpointing of both kinds) at a batch of 8 to 256 with SGD, Adam or AdamW.

Truth and estimate are bench/estimate/setups.py's, through its `measure`:
the peak NVML footprint of a fresh training process over 4 optimiser steps
with the set-up's loop, against colo.estimate told the same set-up on the CPU
(2 threads a row, 4 rows at once by default). A row whose model cannot be
built or estimated is kept with its error; a row whose library does not
import is kept as skipped. `run` needs torchvision, transformers and peft
(timm rows are skipped, with the reason, where timm is missing); `check`
builds every row it can on any machine, says which libraries it skipped,
and with --estimate times colo.estimate on 2 threads; `recheck` estimates
those rows here against a GPU run's committed truth.

A fifth of the architectures is held out (`heldout_architectures`, a rule
fixed before any tuning) and reported separately by `summarize`.
"""
import argparse
import concurrent.futures
import hashlib
import importlib.util
import json
import multiprocessing
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_models  # noqa: E402
import setups  # noqa: E402


class LayerNormMlp(nn.Module):
    """A custom MLP on flat features: pre-norm residual blocks of LayerNorm,
    Linear, GELU, Linear."""

    def __init__(self, features=1024, width=1024, blocks=6, classes=100):
        super().__init__()
        self.stem = nn.Linear(features, width)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.GELU(),
                                                  nn.Linear(4 * width, width)) for _ in range(blocks))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = x + block(x)
        return self.head(self.norm(x))


class T5Denoiser(nn.Module):
    """T5 from a config with one tensor in and the logits out: the decoder is
    fed the input ids, as a denoising step feeds it the targets."""

    def __init__(self):
        super().__init__()
        from transformers import T5Config, T5ForConditionalGeneration
        self.t5 = T5ForConditionalGeneration(T5Config(vocab_size=16000, d_model=512, d_kv=64, d_ff=2048, num_layers=4,
                                                      num_decoder_layers=4, num_heads=8))

    def forward(self, ids):
        return self.t5(input_ids=ids, decoder_input_ids=ids).logits

    def gradient_checkpointing_enable(self, **kwargs):
        self.t5.gradient_checkpointing_enable(**kwargs)


def timm_model(name):
    import timm
    return timm.create_model(name, pretrained=False)


def hf_gpt2_small():
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config())  # GPT-2 small: 12 x 768, vocabulary 50257


def hf_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return LlamaForCausalLM(LlamaConfig(vocab_size=16000, hidden_size=512, intermediate_size=1408, num_hidden_layers=4,
                                        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=512))


def hf_opt():
    from transformers import OPTConfig, OPTForCausalLM
    return OPTForCausalLM(OPTConfig(vocab_size=16000, hidden_size=512, word_embed_proj_dim=512, num_hidden_layers=4,
                                    ffn_dim=2048, num_attention_heads=8, max_position_embeddings=512))


def hf_gpt_neox():
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM
    return GPTNeoXForCausalLM(GPTNeoXConfig(vocab_size=16000, hidden_size=512, num_hidden_layers=4,
                                            num_attention_heads=8, intermediate_size=2048, max_position_embeddings=512))


def hf_distilbert():
    from transformers import DistilBertConfig, DistilBertForSequenceClassification
    return DistilBertForSequenceClassification(DistilBertConfig(vocab_size=16000, n_layers=6, dim=512, hidden_dim=2048,
                                                                n_heads=8, num_labels=4))


def hf_roberta():
    from transformers import RobertaConfig, RobertaForSequenceClassification
    return RobertaForSequenceClassification(RobertaConfig(vocab_size=16000, hidden_size=512, num_hidden_layers=6,
                                                          num_attention_heads=8, intermediate_size=2048, num_labels=4))


def image(size=224):
    return lambda: torch.randn(1, 3, size, size)


def tokens(vocab, length):
    return lambda: torch.randint(0, vocab, (1, length))


def tv(name):
    return lambda: real_models.torchvision_model(name)


@dataclass(frozen=True)
class Architecture:
    """One architecture of the validation set and what its set-ups touch."""
    family: str              # its model class, in real_models' words where it has one there
    library: str             # what must import to build it
    build: object            # () -> nn.Module, on the CPU, fresh weights
    example: object          # () -> one input at batch 1
    rows: tuple              # (setup, batch, optimizer) of each row
    head: str = ""           # frozen_backbone: the trainable classifier
    last: tuple = ()         # last_blocks: the trainable submodules
    lora: tuple = ()         # lora: peft's target_modules
    checkpoint: object = ()  # checkpoint set-ups: ((container, first child), ...), or "hf"


RESNET_LAYERS = (("layer1", 0), ("layer2", 0), ("layer3", 0), ("layer4", 0))

ARCHITECTURES = {
    # torchvision
    "resnet18": Architecture("resnet", "torchvision", tv("resnet18"), image(), (
        ("fp32", 256, "sgd"), ("fp32", 64, "adam"), ("bf16", 128, "adamw"), ("frozen_backbone", 128, "sgd")),
        head="fc"),
    "resnet34": Architecture("resnet", "torchvision", tv("resnet34"), image(), (
        ("fp32", 128, "sgd"), ("fp16_scaler", 128, "adamw"), ("last_blocks", 64, "adam")), last=("layer4", "fc")),
    "resnet50": Architecture("resnet", "torchvision", tv("resnet50"), image(), (
        ("fp32", 64, "sgd"), ("checkpoint", 64, "adamw"), ("checkpoint_reentrant", 64, "sgd"),
        ("accumulate4", 32, "adam"), ("keep_output", 8, "adam")), checkpoint=RESNET_LAYERS),
    "wide_resnet50_2": Architecture("resnet", "torchvision", tv("wide_resnet50_2"), image(), (
        ("fp32", 32, "sgd"), ("frozen_backbone", 64, "adamw"), ("accumulate4", 16, "sgd")), head="fc"),
    "resnext50_32x4d": Architecture("resnet", "torchvision", tv("resnext50_32x4d"), image(), (
        ("fp32", 64, "adam"), ("pure_bf16", 64, "adamw"), ("last_blocks", 64, "sgd")), last=("layer4", "fc")),
    "mobilenet_v2": Architecture("mobilenet", "torchvision", tv("mobilenet_v2"), image(), (
        ("fp32", 128, "sgd"), ("checkpoint", 128, "adam"), ("checkpoint_reentrant", 128, "sgd"),
        ("keep_grads", 96, "sgd")),
        checkpoint=(("features", 1),)),
    "mobilenet_v3_large": Architecture("mobilenet", "torchvision", tv("mobilenet_v3_large"), image(), (
        ("fp32", 256, "adamw"), ("frozen_backbone", 256, "sgd"), ("fp16_scaler", 128, "adam")), head="classifier"),
    "efficientnet_b0": Architecture("efficientnet", "torchvision", tv("efficientnet_b0"), image(), (
        ("fp32", 64, "adamw"), ("bf16", 128, "adamw"), ("accumulate4", 32, "sgd"), ("last_blocks", 64, "adam")),
        last=("features.7", "features.8", "classifier")),
    "regnet_y_800mf": Architecture("regnet", "torchvision", tv("regnet_y_800mf"), image(), (
        ("fp32", 128, "sgd"), ("frozen_backbone", 128, "adamw"), ("pure_bf16", 128, "adam")), head="fc"),
    "regnet_y_1_6gf": Architecture("regnet", "torchvision", tv("regnet_y_1_6gf"), image(), (
        ("fp32", 64, "adamw"), ("bf16", 64, "sgd"), ("last_blocks", 128, "adamw")),
        last=("trunk_output.block4", "fc")),
    "mnasnet1_0": Architecture("mnasnet", "torchvision", tv("mnasnet1_0"), image(), (
        ("fp32", 128, "adam"), ("keep_output", 64, "sgd"), ("fp16_scaler", 128, "sgd"))),
    "shufflenet_v2_x1_0": Architecture("shufflenet", "torchvision", tv("shufflenet_v2_x1_0"), image(), (
        ("fp32", 256, "sgd"), ("bf16", 256, "adamw"), ("frozen_backbone", 256, "adam")), head="fc"),
    "squeezenet1_1": Architecture("squeezenet", "torchvision", tv("squeezenet1_1"), image(), (
        ("fp32", 256, "sgd"), ("accumulate4", 64, "adam"), ("keep_grads", 128, "adamw"))),
    "densenet121": Architecture("densenet", "torchvision", tv("densenet121"), image(), (
        ("fp32", 32, "sgd"), ("frozen_backbone", 64, "adamw"), ("bf16", 32, "adam")), head="classifier"),
    "convnext_tiny": Architecture("convnext", "torchvision", tv("convnext_tiny"), image(), (
        ("fp32", 32, "adamw"), ("fp16_scaler", 64, "adamw"), ("last_blocks", 64, "adamw"),
        ("keep_grads", 32, "adamw")), last=("features.7", "classifier")),
    # ViT-B/32, not B/16 (setups.py's): 50 tokens instead of 197 keep its estimate within 10 s on 2 cores.
    "vit_b_32": Architecture("vit", "torchvision", tv("vit_b_32"), image(), (
        ("fp32", 64, "adamw"), ("lora", 64, "adamw"), ("checkpoint", 128, "adamw"), ("pure_bf16", 64, "adamw")),
        lora=("mlp.0", "mlp.3"), checkpoint=(("encoder.layers", 0),)),
    "swin_t": Architecture("swin", "torchvision", tv("swin_t"), image(), (
        ("fp32", 32, "adamw"), ("frozen_backbone", 64, "adamw"), ("bf16", 64, "adamw"), ("keep_grads", 32, "sgd")),
        head="head"),
    # timm, built with pretrained=False: no weights are fetched
    "timm_deit_small": Architecture("vit", "timm", lambda: timm_model("deit_small_patch16_224"), image(), (
        ("fp32", 64, "adamw"), ("lora", 64, "adamw"), ("bf16", 128, "adamw"), ("frozen_backbone", 128, "sgd")),
        head="head", lora=("qkv",)),
    "timm_mixer_s16": Architecture("mixer", "timm", lambda: timm_model("mixer_s16_224"), image(), (
        ("fp32", 64, "adam"), ("fp16_scaler", 128, "adamw"), ("accumulate4", 32, "sgd"))),
    "timm_cspresnet50": Architecture("cspnet", "timm", lambda: timm_model("cspresnet50"), image(), (
        ("fp32", 64, "sgd"), ("frozen_backbone", 64, "adamw"), ("pure_bf16", 64, "adamw")), head="head"),
    # Hugging Face, built from configs
    "hf_gpt2_small": Architecture("gpt2", "transformers", hf_gpt2_small, tokens(50257, 128), (
        ("fp32", 8, "adamw"), ("lora", 16, "adamw"), ("checkpoint", 16, "adamw"), ("last_blocks", 8, "adam"),
        ("keep_output", 8, "sgd")), last=("transformer.h.10", "transformer.h.11", "transformer.ln_f"),
        lora=("c_attn", "c_proj"), checkpoint="hf"),
    "hf_llama": Architecture("llama", "transformers", hf_llama, tokens(16000, 256), (
        ("fp32", 8, "adamw"), ("lora", 16, "adamw"), ("bf16", 16, "adamw"), ("checkpoint_reentrant", 16, "adamw"),
        ("pure_bf16", 8, "adamw")), lora=("q_proj", "k_proj", "v_proj", "o_proj"), checkpoint="hf"),
    "hf_opt": Architecture("opt", "transformers", hf_opt, tokens(16000, 256), (
        ("fp32", 16, "adam"), ("lora", 16, "adamw"), ("fp16_scaler", 16, "adamw"), ("accumulate4", 8, "adamw")),
        lora=("q_proj", "v_proj")),
    "hf_gpt_neox": Architecture("gpt_neox", "transformers", hf_gpt_neox, tokens(16000, 256), (
        ("fp32", 16, "adamw"), ("lora", 16, "adamw"), ("keep_grads", 8, "sgd"), ("bf16", 16, "adamw")),
        lora=("query_key_value",)),
    "hf_bert": Architecture("bert", "transformers", real_models.hf_bert, tokens(16000, 128), (
        ("fp32", 32, "adamw"), ("frozen_backbone", 64, "adamw"), ("last_blocks", 32, "adamw"),
        ("checkpoint", 32, "adamw"), ("lora", 64, "adamw")), head="classifier",
        last=("bert.encoder.layer.5", "bert.pooler", "classifier"), lora=("query", "key", "value", "dense"),
        checkpoint="hf"),
    "hf_distilbert": Architecture("distilbert", "transformers", hf_distilbert, tokens(16000, 128), (
        ("fp32", 32, "adamw"), ("lora", 32, "adamw"), ("fp16_scaler", 32, "adamw"), ("frozen_backbone", 64, "sgd")),
        head="classifier", lora=("q_lin", "k_lin", "v_lin", "out_lin")),
    "hf_roberta": Architecture("bert", "transformers", hf_roberta, tokens(16000, 128), (
        ("fp32", 32, "adamw"), ("lora", 32, "adamw"), ("bf16", 32, "adamw"), ("accumulate4", 16, "adamw")),
        lora=("query", "value")),
    "hf_t5": Architecture("t5", "transformers", T5Denoiser, tokens(16000, 128), (
        ("fp32", 16, "adamw"), ("lora", 16, "adamw"), ("checkpoint", 16, "adamw"), ("bf16", 16, "adamw")),
        lora=("q", "k", "v", "o"), checkpoint="hf"),
    # custom modules
    "mlp_ln": Architecture("mlp", "torch", LayerNormMlp, lambda: torch.randn(1, 1024), (
        ("fp32", 256, "sgd"), ("bf16", 256, "adamw"), ("checkpoint_reentrant", 256, "adam"),
        ("keep_grads", 128, "adamw"), ("frozen_backbone", 256, "adamw")), head="head",
        checkpoint=(("blocks", 0),)),
    "se_cnn": Architecture("custom", "torch", real_models.SqueezeExciteNet, lambda: torch.randn(1, 3, 64, 64), (
        ("fp32", 256, "adam"), ("fp16_scaler", 256, "adamw"), ("accumulate4", 128, "sgd"))),
    "plain_gpt": Architecture("gpt-plain", "torch", real_models.PlainGpt, tokens(8000, 256), (
        ("fp32", 16, "adamw"), ("lora", 16, "adamw"), ("pure_bf16", 16, "adamw"), ("keep_output", 8, "adam")),
        lora=("linear1", "linear2")),
}

# setups.py's shape of a model table: name -> (family, build, example, batches).
MODELS = {name: (a.family, a.build, a.example, ()) for name, a in ARCHITECTURES.items()}


# Issue 50's held-out fifth, fixed before any tuning and blind to results.
HELDOUT_RULE = ("leave out every family that an earlier validation in this repository measured "
                "(real_models.MODELS, which setups.py draws on too: colo has been tuned against those); rank the "
                "other architectures by the SHA-256 of their names; hold out the first round(n / 5), n counting "
                "all architectures")


def heldout_architectures():
    """The architectures HELDOUT_RULE holds out, by name. It does not depend
    on what imports where it runs; adding an architecture can move the fifth,
    so a new one goes in with a note of what moved."""
    seen = {family for family, *_ in real_models.MODELS.values()}
    fresh = sorted((n for n, a in ARCHITECTURES.items() if a.family not in seen),
                   key=lambda n: hashlib.sha256(n.encode()).hexdigest())
    return sorted(fresh[:round(len(ARCHITECTURES) / 5)])


def all_rows():
    """Every row as setups.py's measure takes it: the set-up's parts named in the row."""
    heldout = set(heldout_architectures())
    rows = []
    for name, a in ARCHITECTURES.items():
        for setup, batch, optimizer in a.rows:
            row = {"setup": setup, "model": name, "family": a.family, "library": a.library, "batch": batch,
                   "optimizer": optimizer, "heldout": name in heldout}
            if setup == "frozen_backbone":
                row["head"] = a.head
            elif setup == "last_blocks":
                row["trainable"] = list(a.last)
            elif setup == "lora":
                row["lora_targets"] = list(a.lora)
            elif setup.startswith("checkpoint"):
                row["checkpoint_blocks"] = a.checkpoint if a.checkpoint == "hf" else [list(c) for c in a.checkpoint]
            rows.append(row)
    return rows


def libraries_of(row):
    return (row["library"],) + (("peft",) if row["setup"] == "lora" else ())


def missing_libraries(rows):
    return sorted({lib for r in rows for lib in libraries_of(r) if lib != "torch" and not importable(lib)})


def importable(library):
    return importlib.util.find_spec(library) is not None


def select(rows, only):
    """The rows whose set-up, architecture or library is among the comma-separated `only` (all when empty)."""
    if not only:
        return rows
    names = set(only.split(","))
    return [r for r in rows if names & {r["setup"], r["model"], r["library"]}]


def estimate_row(row, threads, gpu=None, foreach=False):
    """setups.colo_estimate on this file's models (module-level: the estimate workers are spawned)."""
    return setups.colo_estimate(row, threads, MODELS, gpu, foreach)


def run(args):
    rows = select(all_rows(), args.only)
    # The GPU machine has every library but perhaps timm: without the others the
    # set falls below issue 50's 25 architectures, so that is an error.
    required = sorted({"torchvision", "transformers", "peft"} & set(missing_libraries(rows)))
    if required:
        sys.exit(f"real_training.py run: not importable here: {', '.join(required)} (pip install them); "
                 f"`check` builds what it can without them")
    if not shutil.which("nvidia-smi"):
        sys.exit("real_training.py run: no nvidia-smi here: truth needs a GPU")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump({"command": shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:]), "threads": args.threads,
                   "parallel": args.parallel, "estimators": args.estimators, "cpus": os.cpu_count()}, f)
    runnable = []
    with open(os.path.join(args.out, "rows.jsonl"), "a") as out:
        for row in rows:
            missing = [lib for lib in libraries_of(row) if lib != "torch" and not importable(lib)]
            if missing:  # kept in the rows, counted by summarize
                out.write(json.dumps(dict(row, skipped=f"not importable here: {', '.join(missing)}")) + "\n")
            else:
                runnable.append(row)
    print(f"{len(runnable)} of {len(rows)} rows; held out: {', '.join(heldout_architectures())}", flush=True)
    setups.measure(runnable, args.out, args.parallel, args.threads, os.path.abspath(__file__), estimate_row,
                   args.estimators)


def check(args):
    """Builds every row's model that this machine can (and estimates it with --estimate)."""
    rows = select(all_rows(), args.only)
    missing = missing_libraries(rows)
    if missing:
        skipped = [r for r in rows if set(libraries_of(r)) & set(missing)]
        print(f"skipping {len(skipped)} rows: not importable here: {', '.join(missing)} "
              f"({len({r['model'] for r in skipped})} architectures)", flush=True)
        rows = [r for r in rows if r not in skipped]
    out = open(args.out, "w") if args.out else None
    failed = 0
    for row in rows:
        start = time.time()
        if args.estimate:
            result = estimate_row(row, 2)
        else:
            try:
                model = setups.build(row, MODELS)
                setups.example(row, MODELS)
                result = {"parameters": sum(p.numel() for p in model.parameters()),
                          "trainable": sum(p.numel() for p in model.parameters() if p.requires_grad)}
            except Exception as exc:
                result = {"build_error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        failed += "build_error" in result or "colo_error" in result
        record = dict(row, **result, seconds=time.time() - start, torch=torch.__version__)
        if out:
            out.write(json.dumps(record) + "\n")
            out.flush()
        what = result.get("build_error") or result.get("colo_error") or (
            f"colo {result['colo_bytes'] / 2**30:.2f} GiB in {result['colo_s']:.1f} s" if args.estimate
            else f"{result['parameters'] / 1e6:.1f} M parameters, {result['trainable'] / 1e6:.2f} M trainable")
        print(f"{row['setup']:20} {row['model']:20} b{row['batch']:<4} {what}", flush=True)
    print(f"{len(rows) - failed} of {len(rows)} rows {'estimated' if args.estimate else 'built'}", flush=True)
    sys.exit(1 if failed else 0)


def recheck(args):
    """colo.estimate of every row this machine can build, on its CPU, against
    the truth a GPU run measured (`--truth ROWS.jsonl`): the truth of a row
    does not change with colo (it repeated on a second H100 run and on an
    H200), so an estimator change can be judged here before a device call.
    Writes rows.jsonl and summary.json (with the GPU run's own estimates of
    the same rows beside) to --out."""
    truth = {(r["setup"], r["model"], r["batch"], r["optimizer"]): r
             for r in map(json.loads, open(args.truth)) if r.get("truth_bytes")}
    rows = [r for r in select(all_rows(), args.only)
            if not set(libraries_of(r)) & set(missing_libraries([r]))
            and (r["setup"], r["model"], r["batch"], r["optimizer"]) in truth]
    os.makedirs(args.out, exist_ok=True)
    records, then = [], []
    # Estimates run `--estimators` at a time in spawned workers (a GPU host's CPUs), reported in row order.
    pool = setups.estimator_pool(args.estimators, args.threads, multiprocessing.get_context("spawn")) \
        if args.estimators > 1 else None
    estimates = [pool.submit(estimate_row, row, args.threads, args.gpu, args.foreach) for row in rows] if pool else None
    with open(os.path.join(args.out, "rows.jsonl"), "w") as out:
        for i, row in enumerate(rows):
            measured = truth[(row["setup"], row["model"], row["batch"], row["optimizer"])]
            try:
                estimated = estimates[i].result() if pool else estimate_row(row, args.threads, args.gpu, args.foreach)
            except concurrent.futures.process.BrokenProcessPool as exc:
                estimated = {"colo_error": f"the estimate's worker died: {exc}"}
            record = dict(row, **estimated, **setups.peer_estimates(row, MODELS),
                          torch=torch.__version__,
                          **{k: measured[k] for k in ("truth_bytes", "max_reserved", "max_allocated")},
                          gpu_run_colo_bytes=measured.get("colo_bytes"),
                          gpu_run_colo_high_bytes=measured.get("colo_high_bytes"))
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(setups.line_of(record), flush=True)
            if setups.error(record) is not None:
                records.append(record)
                then.append(dict(record, colo_bytes=record["gpu_run_colo_bytes"],
                                 colo_high_bytes=record["gpu_run_colo_high_bytes"]))
    if pool:
        pool.shutdown()

    def as_peer(key):
        return [dict(r, colo_bytes=r[key], colo_high_bytes=r[key]) for r in records if r.get(key)]

    summary = {"rows": len(records), "failed": len(rows) - len(records), "torch": torch.__version__,
               "threads": args.threads, "truth": os.path.relpath(args.truth),
               "here": accuracy(records), "gpu_run_estimates_of_these_rows": accuracy(then),
               "heldout": {"architectures": sorted({r["model"] for r in records if r["heldout"]}),
                           "here": accuracy([r for r in records if r["heldout"]]),
                           "gpu_run_estimates_of_these_rows": accuracy([r for r in then if r["heldout"]])},
               "peers": {"horus_rule": accuracy(as_peer("horus_bytes")), "learned": accuracy(as_peer("learned_bytes")),
                         "fake_tensor_memtracker": "not run by recheck: ../real_models compares it on plain rows (torch 2.x)"},
               "seconds_max": round(max((r["colo_s"] for r in records), default=0), 2),
               "command": shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:])}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps({k: ({m: v for m, v in s.items() if m != "under5_rows"} if isinstance(s, dict) else s)
                      for k, s in summary.items()}))


def accuracy(records):
    """Issue 50's measures over `records`: |error| median and p95, and the
    shares of rows under by more than 5% (bytes, and bytes_high)."""
    errs = [setups.error(r) for r in records]
    if not errs:
        return {"rows": 0}
    highs = [setups.error(r, "colo_high_bytes") for r in records]
    base = real_models.stats(errs, len(errs))
    return {"rows": len(errs), "median_pct": round(base["median_pct"], 2), "p95_pct": round(base["p95_pct"], 2),
            "under5_pct": round(100 * sum(e < -0.05 for e in errs) / len(errs), 2),
            "under5_high_pct": round(100 * sum(h is not None and h < -0.05 for h in highs) / len(errs), 2),
            "under": sum(e < 0 for e in errs), "under10": sum(e < -0.10 for e in errs),
            "under5_rows": [f"{r['model']} {r['setup']} b{r['batch']} {100 * e:+.1f}%"
                            for r, e in zip(records, errs) if e < -0.05]}


def per_gpu(records):
    return {gpu: accuracy([r for r in records if r["gpu"] == gpu]) for gpu in sorted({r["gpu"] for r in records})}


def card_key(gpu):
    """A card's short name from nvidia-smi's line: "NVIDIA H100 80GB HBM3, ..." -> "h100"."""
    words = gpu.replace(",", " ").split()
    return (words[1] if len(words) > 1 and words[0] == "NVIDIA" else words[0]).lower()


def run_file_of(rows_path):
    """The run.json that `run` wrote beside a rows file: run_CARD.json beside
    rows_CARD.jsonl (several cards' rows in one folder), else run.json."""
    folder, name = os.path.split(os.path.abspath(rows_path))
    own = os.path.join(folder, "run" + name[len("rows"):-len(".jsonl")] + ".json") \
        if name.startswith("rows") and name.endswith(".jsonl") else ""
    return own if own and os.path.exists(own) else os.path.join(folder, "run.json")


def summarize(args):
    gpus = args.gpu if len(args.gpu) == len(args.rows) else args.gpu[:1] * len(args.rows)
    if len(args.gpu) not in (1, len(args.rows)):
        sys.exit("real_training.py summarize: give one --gpu, or one per rows file")
    records = [dict(json.loads(line), gpu=gpu) for path, gpu in zip(args.rows, gpus)
               for line in open(path) if line.strip()]
    measured = [r for r in records if setups.error(r) is not None]
    heldout = heldout_architectures()
    failed = [r for r in records if setups.error(r) is None]
    estimated = [r for r in records if r.get("colo_bytes") is not None]
    two_threads = bool(estimated) and all(r.get("colo_threads") == 2 for r in estimated)
    runs = [json.load(open(p)) for p in sorted({run_file_of(r) for r in args.rows}) if os.path.exists(p)]
    seconds_source, timed = "the run's estimates, " + "; ".join(
        f"{r.get('threads')} threads each, {r.get('estimators')} at once beside {r.get('parallel')} truth "
        f"processes on {r.get('cpus')} CPUs" for r in runs), estimated
    if args.seconds:  # a `check --estimate` on a machine of 2 cores
        timed = [json.loads(line) for line in open(args.seconds) if line.strip()]
        timed = [r for r in timed if r.get("colo_bytes") is not None]
        seconds_source, two_threads = f"{os.path.basename(args.seconds)}: {args.seconds_machine}", bool(timed)
    slowest = sorted(timed, key=lambda r: -r["colo_s"])[:5]
    summary = {
        "issue": 50,
        "architectures": len({r["model"] for r in measured}),
        "rows": len(measured),
        "setups": {s: sum(r["setup"] == s for r in measured) for s in sorted({r["setup"] for r in measured})},
        "gpus": per_gpu(measured),
        "heldout": {"rule": HELDOUT_RULE,
                    "architectures": heldout,
                    "rows": sum(r["model"] in heldout for r in measured),
                    "gpus": per_gpu([r for r in measured if r["model"] in heldout])},
        "tuning": {"architectures": len({r["model"] for r in measured if r["model"] not in heldout}),
                   "gpus": per_gpu([r for r in measured if r["model"] not in heldout])},
        # The same figures under a short name per card ("h100"), for key paths (scripts/check_readme_figures.py).
        "by_card": {card_key(gpu): {"all": per_gpu([r for r in measured if r["gpu"] == gpu])[gpu],
                                    "heldout": per_gpu([r for r in measured if r["gpu"] == gpu
                                                        and r["model"] in heldout]).get(gpu)}
                    for gpu in sorted({r["gpu"] for r in measured})},
        "per_setup": {s: per_gpu([r for r in measured if r["setup"] == s]) for s in sorted({r["setup"] for r in measured})},
        "failed": {"rows": len(failed),
                   "build_error": sum("build_error" in r for r in failed),
                   "colo_error": sum("colo_error" in r for r in failed),
                   "truth_error": sum("truth_error" in r for r in failed),
                   "skipped": sum("skipped" in r for r in failed),
                   "each": [f"{r['model']} {r['setup']} b{r['batch']}: " + (
                       r.get("skipped") or r.get("build_error") or r.get("colo_error")
                       or r.get("truth_error", "")[-200:]) for r in failed]},
        "unmodelled_ops": {f"{r['model']} {r['setup']}": r["colo_unmodelled"] for r in measured
                           if r.get("colo_unmodelled")},
        "seconds_max_2cores": round(max(r["colo_s"] for r in timed), 2) if two_threads else None,
        "seconds_source": seconds_source,
        "seconds_slowest": [f"{r['model']} {r['setup']} b{r['batch']} {r['colo_s']:.1f} s" for r in slowest],
        "peers": "left out: FakeTensor/MemTracker, the Horus-style rule and the learned estimator do not model "
                 "frozen parts, adapters, autocast or checkpointing; real_models.py compares them on plain rows",
        "targets": {"median_pct": 3, "p95_pct": 8, "under5_high_pct": 0, "under5_pct": 5, "seconds_every_row": 10},
        "truth": "peak NVML footprint of the training process (nvidia-smi --query-compute-apps), 4 optimiser steps",
        "commands": [args.command] + [r["command"] for r in runs]
                    + [shlex.join([os.path.relpath(sys.argv[0])] + sys.argv[1:])],
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for r in records:
        print(("[held out] " if r["model"] in heldout else "") + setups.line_of(r))
    print(json.dumps({"architectures": summary["architectures"], "rows": summary["rows"],
                      "failed": summary["failed"]["rows"],
                      "gpus": {g: {k: v for k, v in s.items() if k != "under5_rows"} for g, s in summary["gpus"].items()},
                      "heldout": {g: {k: v for k, v in s.items() if k != "under5_rows"}
                                  for g, s in summary["heldout"]["gpus"].items()},
                      "seconds_max_2cores": summary["seconds_max_2cores"]}))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--only", default="", help="comma-separated set-ups, architectures or libraries")
    r.add_argument("--parallel", type=int, default=4, help="truth processes at once on the GPU")
    r.add_argument("--threads", type=int, default=2, help="CPU threads of each colo.estimate")
    r.add_argument("--estimators", type=int, default=4, help="colo.estimate processes at once on the CPU")
    t = sub.add_parser("truth")
    t.add_argument("row")
    c = sub.add_parser("check")
    c.add_argument("--only", default="", help="comma-separated set-ups, architectures or libraries")
    c.add_argument("--estimate", action="store_true", help="also colo.estimate each row (2 threads)")
    c.add_argument("--out", default="", help="rows.jsonl of what check found")
    k = sub.add_parser("recheck", help="colo.estimate here of the rows this machine builds, against a GPU run's truth")
    k.add_argument("--truth", required=True, help="rows.jsonl of a GPU run")
    k.add_argument("--out", required=True)
    k.add_argument("--only", default="", help="comma-separated set-ups, architectures or libraries")
    k.add_argument("--threads", type=int, default=2)
    k.add_argument("--estimators", type=int, default=1, help="colo.estimate processes at once")
    k.add_argument("--gpu", default=None, help="the stored GPU profile to estimate for (colo.estimate's gpu=); "
                                                "default this machine's GPU's, else the built-in one")
    k.add_argument("--foreach", action="store_true",
                   help="every optimiser with foreach on, as torch 2 runs them on a GPU (torch 1.13 here does not)")
    s = sub.add_parser("summarize")
    s.add_argument("rows", nargs="+")
    s.add_argument("--out", required=True)
    s.add_argument("--gpu", action="append", required=True, help="the GPU's name; one, or one per rows file")
    s.add_argument("--seconds", default="", help="rows of `check --estimate` on a 2-core machine")
    s.add_argument("--seconds-machine", default="", help="what that machine was")
    s.add_argument("--command", default="bench/gpu/run.sh realtraining")
    args = parser.parse_args()
    if args.verb == "run":
        run(args)
    elif args.verb == "truth":
        setups.truth(json.loads(args.row), MODELS)
    elif args.verb == "check":
        check(args)
    elif args.verb == "recheck":
        recheck(args)
    else:
        summarize(args)


if __name__ == "__main__":
    main()
