"""LoRA adapters as peft writes them, made fusable. A peft LoRA layer (a
`base_layer` with `lora_A`, `lora_B`, `lora_dropout` and `scaling` per
adapter) becomes, while colo.fuse traces, a LoRALinear with the same
state_dict names, whose forward fx can trace; users may also build
LoRALinear themselves. Models whose adapters differ in
rank are padded with zeros to the largest rank: zero rows of A and zero
columns of B get zero gradients and stay zero under SGD, Adam and AdamW, so
each model trains exactly as at its own rank; unfuse slices them back."""
import contextlib

import torch

from colo.fuse.stacking import FuseError

PEFT_PREFIX = "base_model.model."


class LoRALinear(torch.nn.Module):
    """base_layer(x) + lora_B(lora_A(lora_dropout(x))) * scaling, for one
    adapter, under peft's names. The scaling is a buffer (left out of the
    state_dict) so that models of different ranks or alphas fuse."""

    def __init__(self, base_layer, lora_A, lora_B, lora_dropout, scaling, adapter):
        super().__init__()
        self.base_layer, self.adapter = base_layer, adapter
        self.lora_A = torch.nn.ModuleDict({adapter: lora_A})
        self.lora_B = torch.nn.ModuleDict({adapter: lora_B})
        self.lora_dropout = torch.nn.ModuleDict({adapter: lora_dropout})
        self.register_buffer("lora_scaling", torch.tensor(float(scaling)), persistent=False)

    def forward(self, x):
        y = self.base_layer(x)
        a, b, drop = self.lora_A[self.adapter], self.lora_B[self.adapter], self.lora_dropout[self.adapter]
        return y + b(a(drop(x))) * self.lora_scaling.to(y.dtype)


def _is_peft_lora(module):
    return all(hasattr(module, name) for name in ("base_layer", "lora_A", "lora_B", "lora_dropout", "scaling")) \
        and isinstance(module.lora_A, torch.nn.ModuleDict)


def _is_lora(module):
    return isinstance(module, LoRALinear) or _is_peft_lora(module)


def _parts(layer, path):
    """(adapter name, A, B, dropout, scaling) of a peft LoRA layer or a LoRALinear."""
    if isinstance(layer, LoRALinear):
        a = layer.adapter
        return a, layer.lora_A[a], layer.lora_B[a], layer.lora_dropout[a], layer.lora_scaling.item()
    a = _active_adapter(layer, path)
    return a, layer.lora_A[a], layer.lora_B[a], layer.lora_dropout[a], layer.scaling[a]


def _active_adapter(module, path):
    active = getattr(module, "active_adapters", None) or [getattr(module, "active_adapter", "default")]
    active = [active] if isinstance(active, str) else list(active)
    if len(active) != 1 or active[0] not in module.lora_A:
        raise FuseError(f"colo.fuse: LoRA layer '{path}' has active adapters {active}; colo.fuse fuses one "
                        "active adapter per model")
    if getattr(module, "merged", False) or getattr(module, "disable_adapters", False):
        raise FuseError(f"colo.fuse: LoRA layer '{path}' is merged or disabled; fuse models whose adapters train")
    if getattr(module, "use_dora", {}).get(active[0], False):
        raise FuseError(f"colo.fuse: LoRA layer '{path}' uses DoRA, which colo.fuse does not fuse")
    return active[0]


def _padded(linear, rank, axis):
    """A copy of `linear` (no bias) whose weight is zero-padded to `rank` along `axis`."""
    weight = linear.weight
    shape = list(weight.shape)
    shape[axis] = rank
    padded = torch.nn.Linear(shape[1], shape[0], bias=False, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        padded.weight.zero_()
        padded.weight.narrow(axis, 0, weight.shape[axis]).copy_(weight)
    padded.weight.requires_grad_(weight.requires_grad)
    return padded


def _replace(root, path, module):
    owner_path, _, leaf = path.rpartition(".")
    owner = root.get_submodule(owner_path) if owner_path else root
    setattr(owner, leaf, module)


def unwrap_peft(models):
    """The models under a peft PeftModel wrapper (their base models), and the
    prefix their state_dict names lose ("" when none was wrapped)."""
    if all(hasattr(m, "get_base_model") and hasattr(getattr(m, "base_model", None), "model") for m in models):
        return [m.base_model.model for m in models], PEFT_PREFIX
    return list(models), ""


@contextlib.contextmanager
def fusable_adapters(models):
    """While open, every peft LoRA layer of `models` is a LoRALinear (ranks
    padded to the largest per layer); on exit the models are as they were.
    Yields {parameter name: (axis, [rank per model])} for padded weights."""
    paths = [path for path, m in models[0].named_modules() if _is_lora(m)]
    originals, padded = [], {}
    try:
        for path in paths:
            layers = [m.get_submodule(path) for m in models]
            if not all(_is_lora(layer) for layer in layers):
                raise FuseError(f"colo.fuse: '{path}' is a LoRA layer in model 0 but not in every model")
            parts = [_parts(layer, path) for layer in layers]
            adapters = [p[0] for p in parts]
            ranks = [p[1].weight.shape[0] for p in parts]
            top = max(ranks)
            for model, layer, (adapter, a, b, dropout, scaling), rank in zip(models, layers, parts, ranks):
                if b.bias is not None or a.bias is not None:
                    raise FuseError(f"colo.fuse: LoRA layer '{path}' has adapter biases, which colo.fuse does not fuse")
                if rank != top:
                    a, b = _padded(a, top, 0), _padded(b, top, 1)
                elif isinstance(layer, LoRALinear):
                    continue
                view = LoRALinear(layer.base_layer, a, b, dropout, scaling, adapter)
                view.training = layer.training
                originals.append((model, path, layer))
                _replace(model, path, view)
            if len(set(ranks)) > 1:
                name = f"{path}.lora_A.{adapters[0]}.weight"
                padded[name] = (0, ranks)
                padded[name.replace(".lora_A.", ".lora_B.")] = (1, ranks)
        yield padded
    finally:
        for model, path, layer in reversed(originals):
            _replace(model, path, layer)


def adapter_rank_axes(model):
    """{state_dict name: the axis that is the adapter's rank} for every LoRA
    weight of `model` (peft's layers or LoRALinear)."""
    axes = {}
    for path, module in model.named_modules():
        if _is_lora(module):
            prefix = f"{path}." if path else ""
            for name, _ in module.named_parameters():
                if name.startswith("lora_A."):
                    axes[prefix + name] = 0
                elif name.startswith("lora_B."):
                    axes[prefix + name] = 1
    return axes


def unpad(state, padded, index):
    """Model `index`'s state_dict with padded adapter weights cut to its rank."""
    for name, (axis, ranks) in padded.items():
        if name in state:
            state[name] = state[name].narrow(axis, 0, ranks[index]).clone()
    return state


def peft_adapter_state(state, adapter="default"):
    """The adapter weights of a full state_dict (peft's names) in the form
    peft saves them (get_peft_model_state_dict): LoRA weights only, without
    the adapter's name."""
    return {name.replace(f".{adapter}.", "."): value for name, value in state.items() if ".lora_" in name}
