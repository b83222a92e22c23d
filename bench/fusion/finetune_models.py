"""The fine-tuning set-ups of bench/fusion/finetune.py, each one pretrained
model fine-tuned N ways: N copies share the frozen weights (the same values,
as after loading one checkpoint) and differ in what trains.

  frozen_heads   torchvision ResNet-50, backbone frozen (eval mode), a new
                 linear head per model
  frozen_blocks  a GPT-2-size causal LM (12 blocks, 768 wide, 12 heads,
                 vocabulary 50257, 256 tokens) with its embeddings, bottom 8
                 blocks and (tied, so frozen) LM head frozen
  lora           the same LM wholly frozen, LoRA on the q, k, v and o
                 projections of every block (peft when it is installed)
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

GPT2 = {"layers": 12, "width": 768, "heads": 12, "vocab": 50257, "tokens": 256}


class Attention(nn.Module):
    """Causal self-attention with separate q, k, v, o projections, on
    PyTorch's fused attention kernel (what current models use)."""

    def __init__(self, width, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))

    def forward(self, x):
        b, t, c = x.shape
        split = (lambda y: y.view(b, t, self.heads, c // self.heads).transpose(1, 2))
        y = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)), split(self.v(x)), is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.o(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    """A pre-norm GPT-2 block."""

    def __init__(self, width, heads, dropout):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads, dropout)
        self.fc, self.proj = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        x = x + self.drop(self.attn(self.ln1(x)))
        return x + self.drop(self.proj(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    """A GPT-2-style causal LM; its LM head starts as a copy of the token
    embedding (GPT-2 ties them; both stay frozen here, so a copy is the same)."""

    def __init__(self, layers, width, heads, vocab, tokens, dropout=0.1):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(tokens, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[Block(width, heads, dropout) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        with torch.no_grad():
            self.lm_head.weight.copy_(self.wte.weight)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.drop(self.wte(tokens) + self.wpe(positions))
        return self.lm_head(self.ln_f(self.blocks(x)))


def lm_loss(logits, targets):
    """Next-token cross-entropy of one model's logits [B, T, V]."""
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def _freeze_all_but(model, trainable):
    for name, p in model.named_parameters():
        p.requires_grad_(trainable(name))
    return model


def pretrained(setup, size=None):
    """The one pretrained model every fine-tune starts from (seeded)."""
    torch.manual_seed(0)
    if setup == "frozen_heads":
        import torchvision
        return torchvision.models.resnet50()
    return GPT(**(size or GPT2))


def fine_tune(base, setup, index, rank=8, frozen_blocks=8, classes=100):
    """Model `index` of the fine-tuning array: a copy of `base` with its own
    initial trainable part, the rest frozen."""
    torch.manual_seed(1000 + index)
    model = copy.deepcopy(base)
    if setup == "frozen_heads":
        model.fc = nn.Linear(model.fc.in_features, classes)
        _freeze_all_but(model, lambda name: name.startswith("fc."))
        for name, child in model.named_children():  # the frozen backbone keeps its statistics
            child.train(name == "fc")
        return model
    if setup == "frozen_blocks":
        first = frozen_blocks
        for block in model.blocks[first:]:  # the trainable top gets its own initialisation
            for m in block.modules():
                if isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, std=0.02)
        return _freeze_all_but(model, lambda name: name.startswith("ln_f") or any(
            name.startswith(f"blocks.{i}.") for i in range(first, len(model.blocks))))
    _freeze_all_but(model, lambda name: False)
    return with_lora(model, rank)


def with_lora(model, rank, alpha=16, dropout=0.05):
    """LoRA on every attention projection: peft's get_peft_model when peft is
    installed, else colo's LoRALinear under peft's names."""
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError:
        from colo.fuse.adapters import LoRALinear
        for block in model.blocks:
            for name in ("q", "k", "v", "o"):
                base = getattr(block.attn, name)
                a, b = nn.Linear(base.in_features, rank, bias=False), nn.Linear(rank, base.out_features, bias=False)
                nn.init.kaiming_uniform_(a.weight, a=5 ** 0.5)
                nn.init.normal_(b.weight, std=0.01)
                setattr(block.attn, name, LoRALinear(base, a, b, nn.Dropout(dropout), alpha / rank, "default"))
        return model
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=["q", "k", "v", "o"])
    peft_model = get_peft_model(model, config)
    for name, p in peft_model.named_parameters():
        if "lora_B" in name:  # peft starts B at zero; a little noise makes every step's update differ
            nn.init.normal_(p, std=0.01)
    return peft_model


def adapters_kind():
    try:
        import peft
        return f"peft {peft.__version__}"
    except ImportError:
        return "colo LoRALinear (peft not installed)"
