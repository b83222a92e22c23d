"""colo.fuse with frozen parts the models share (fine-tuning one pretrained
model N ways): a frozen CNN backbone with per-model heads, and hand-written
LoRA adapters beside frozen attention projections. Trained fused in float64,
every model's losses and weights equal a separately trained copy's; the
frozen weights are held once, and the frozen prefix runs once per batch."""
import copy

import pytest
import torch
import torch.nn as nn

import colo.fuse as cf
from test_fuse import image_batches, train_fused_and_alone


class FrozenBackboneNet(nn.Module):
    """A small CNN backbone (convolutions, BatchNorm, pooling) and a linear head."""

    def __init__(self, classes=10):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                      nn.Flatten())
        self.head = nn.Sequential(nn.Dropout(0.0), nn.Linear(16, classes))

    def forward(self, x):
        return self.head(self.backbone(x))


class LoRALinear(nn.Module):
    """A frozen projection plus a trainable low-rank update, written the way
    users write LoRA by hand: base(x) + B(A(dropout(x))) * scaling."""

    def __init__(self, features, rank=4, alpha=8):
        super().__init__()
        self.base = nn.Linear(features, features)
        self.lora_A = nn.Linear(features, rank, bias=False)
        self.lora_B = nn.Linear(rank, features, bias=False)
        self.lora_dropout = nn.Dropout(0.0)
        self.scaling = alpha / rank

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


class LoRAAttention(nn.Module):
    """A hand-written attention block with LoRA on its query and value
    projections, and a LayerNorm."""

    def __init__(self, dim):
        super().__init__()
        self.q, self.k, self.v = LoRALinear(dim), nn.Linear(dim, dim), LoRALinear(dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / 4.0
        return self.norm(x + scores.softmax(-1) @ self.v(x))


class LoRAClassifier(nn.Module):
    """Embeddings, two LoRA attention blocks and a classifier head."""

    def __init__(self, vocab=40, dim=16, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.Sequential(LoRAAttention(dim), LoRAAttention(dim))
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)).mean(dim=1))


def fine_tunes(build, n, trainable):
    """n copies of one 'pretrained' model, each with its own initial trainable
    parameters (named by `trainable(name)`), the rest frozen."""
    torch.manual_seed(0)
    pretrained = build().double()
    models = []
    for i in range(n):
        torch.manual_seed(100 + i)
        fresh = build().double()
        model = copy.deepcopy(pretrained)
        for name, param in model.named_parameters():
            if trainable(name):
                param.data.copy_(dict(fresh.named_parameters())[name].data + 0.01 * i)
            param.requires_grad_(trainable(name))
        models.append(model)
    return models


def worst_difference(fused, alone):
    worst = 0.0
    for model, state in zip(alone, cf.unfuse(fused)):
        assert set(state) == set(model.state_dict())
        for name, value in state.items():
            expected = model.state_dict()[name].double()
            worst = max(worst, ((value.double() - expected).norm() / (expected.norm() + 1e-12)).item())
    return worst


def count_calls(module):
    calls = []
    module.register_forward_hook(lambda layer, args, output: calls.append(tuple(args[0].shape)))
    return calls


def test_frozen_backbone_runs_once_and_heads_train_like_separate_models():
    models = fine_tunes(FrozenBackboneNet, 4, lambda name: name.startswith("head"))
    batches = image_batches(5, 8, 3, 12)
    fused, alone = train_fused_and_alone(models, batches, "sgd", lr=[0.1, 0.05, 0.02, 0.01], momentum=0.9)
    assert worst_difference(fused, alone) < 1e-9
    backbone_conv = fused.get_submodule("backbone.0")
    assert backbone_conv.weight.shape == (8, 3, 3, 3)  # held once, not [4, 8, 3, 3, 3]
    assert fused.get_submodule("head.1").weight.shape == (4, 10, 16)
    calls = count_calls(backbone_conv)
    cf.Trainer(fused, cf.optimizer(fused, "sgd", lr=0.1)).step(batches[0][0].double(), batches[0][1])
    assert calls == [(8, 3, 12, 12)]  # one convolution for all four models, on the shared batch
    # BatchNorm's running statistics moved (train mode) and equal each alone-trained copy's
    assert not torch.equal(fine_tunes(FrozenBackboneNet, 1, lambda n: False)[0].backbone[1].running_mean,
                           alone[0].backbone[1].running_mean)


def test_a_frozen_backbone_in_eval_mode_stays_in_eval_mode():
    models = fine_tunes(FrozenBackboneNet, 2, lambda name: name.startswith("head"))
    for model in models:
        model.backbone.eval()
    fused, alone = train_fused_and_alone(models, image_batches(3, 8, 3, 12), "adam", lr=[1e-2, 1e-3])
    assert worst_difference(fused, alone) < 1e-9
    assert not fused.get_submodule("backbone.1").training and fused.get_submodule("head.1").training
    before = fine_tunes(FrozenBackboneNet, 1, lambda n: False)[0].backbone[1].running_mean
    assert torch.equal(cf.unfuse(fused, 0)["backbone.1.running_mean"], before)


def test_lora_adapters_train_like_separate_models_with_the_base_held_once():
    models = fine_tunes(LoRAClassifier, 3, lambda name: "lora_" in name or name.startswith("head"))
    generator = torch.Generator().manual_seed(3)
    batches = [(torch.randint(0, 40, (6, 7), generator=generator), torch.randint(0, 5, (6,), generator=generator))
               for _ in range(5)]
    fused, alone = train_fused_and_alone(models, batches, "adamw", lr=[1e-2, 5e-3, 2e-3], weight_decay=0.01)
    assert worst_difference(fused, alone) < 1e-9
    for block in ("blocks.0", "blocks.1"):
        for path in ("q.base", "v.base", "k", "norm"):
            shape = models[0].get_submodule(f"{block}.{path}").weight.shape
            assert fused.get_submodule(f"{block}.{path}").weight.shape == shape
        assert fused.get_submodule(f"{block}.q.lora_A").weight.shape == (3, 4, 16)
    first, second = count_calls(fused.get_submodule("blocks.0.v.base")), count_calls(fused.get_submodule("blocks.1.v.base"))
    fused(batches[0][0])
    assert first == [(6, 7, 16)]  # the shared batch's embeddings: once for all models
    assert second == [(3, 6, 7, 16)]  # after the first adapters: one GEMM over all three models' tokens


def test_a_frozen_convolution_between_trainable_layers_runs_over_all_models_rows():
    def build():
        return nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 6, 3), nn.GroupNorm(2, 6), nn.ReLU(),
                             nn.Flatten(), nn.Linear(6 * 8 * 8, 10))
    models = fine_tunes(build, 3, lambda name: not name.startswith(("2.", "3.")))
    fused, alone = train_fused_and_alone(models, image_batches(4, 5, 3, 12), "sgd", lr=[0.05, 0.02, 0.01])
    assert worst_difference(fused, alone) < 1e-9
    assert fused.get_submodule("2").weight.shape == (6, 4, 3, 3)
    calls = count_calls(fused.get_submodule("2"))
    fused(image_batches(1, 5, 3, 12)[0][0].double())
    assert calls == [(15, 4, 10, 10)]


def test_frozen_parameters_that_differ_or_share_frozen_false_are_stacked():
    models = fine_tunes(FrozenBackboneNet, 2, lambda name: name.startswith("head"))
    with torch.no_grad():
        models[1].backbone[0].weight.add_(0.5)
    differing = cf.fuse(models)
    assert differing.get_submodule("backbone.0").weight.shape == (2, 8, 3, 3, 3)
    assert differing.get_submodule("backbone.4").weight.shape == (16, 8, 3, 3)  # still equal: shared
    kept_apart = cf.fuse(fine_tunes(FrozenBackboneNet, 2, lambda name: name.startswith("head")), share_frozen=False)
    assert kept_apart.get_submodule("backbone.4").weight.shape == (2, 16, 8, 3, 3)
    assert not kept_apart.get_submodule("backbone.4").weight.requires_grad


class PeftStyleLoRA(nn.Module):
    """A LoRA layer laid out as peft lays it out (base_layer, lora_A, lora_B,
    lora_dropout and scaling per adapter name), with a forward that fx
    cannot trace (it reads its keyword arguments and loops over adapters)."""

    def __init__(self, base, rank, alpha=16):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.ModuleDict({"default": nn.Linear(base.in_features, rank, bias=False)})
        self.lora_B = nn.ModuleDict({"default": nn.Linear(rank, base.out_features, bias=False)})
        self.lora_dropout = nn.ModuleDict({"default": nn.Identity()})
        self.scaling = {"default": alpha / rank}
        self.active_adapter = "default"
        self.merged = False

    def forward(self, x, *args, **kwargs):
        result = self.base_layer(x)
        for name in self.lora_A.keys():
            if len(kwargs.pop("adapter_names", [])) == 0:
                result = result + self.lora_B[name](self.lora_A[name](self.lora_dropout[name](x))) * self.scaling[name]
        return result


def peft_style_model(rank):
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 12), nn.ReLU(), nn.Linear(12, 4))
    model[2] = PeftStyleLoRA(model[2], rank)
    model[4] = PeftStyleLoRA(model[4], rank)
    return model


def test_peft_style_adapters_of_different_ranks_train_like_separate_models():
    torch.manual_seed(0)
    pretrained = peft_style_model(2).double()
    models = []
    for i, rank in enumerate((2, 4, 8)):
        torch.manual_seed(10 + i)
        model = peft_style_model(rank).double()
        base = {k: v for k, v in pretrained.state_dict().items() if "lora_" not in k}
        model.load_state_dict(base, strict=False)
        for name, param in model.named_parameters():
            param.requires_grad_("lora_" in name)
            if "lora_B" in name:
                nn.init.normal_(param, std=0.1)
        models.append(model)
    generator = torch.Generator().manual_seed(4)
    batches = [(torch.randn(10, 6, generator=generator), torch.randint(0, 4, (10,), generator=generator))
               for _ in range(5)]
    fused, alone = train_fused_and_alone(models, batches, "adam", lr=[1e-2, 5e-3, 2e-2])
    assert worst_difference(fused, alone) < 1e-9  # each at its own rank, state_dict names unchanged
    assert fused.get_submodule("2.lora_A.default").weight.shape == (3, 8, 12)  # padded to the largest rank
    assert fused.get_submodule("2.base_layer").weight.shape == (12, 12)
    saved = cf.adapter_state(fused, 1)
    assert sorted(saved) == ["2.lora_A.weight", "2.lora_B.weight", "4.lora_A.weight", "4.lora_B.weight"]
    assert saved["4.lora_B.weight"].shape == (4, 4)
    assert (saved["2.lora_A.weight"] - alone[1].state_dict()["2.lora_A.default.weight"]).abs().max() < 1e-12
    assert isinstance(models[0][2], PeftStyleLoRA)  # the user's models are left as they were


def test_a_wide_misaligned_frozen_projection_runs_padded_and_gives_the_same_outputs():
    def build():
        return nn.Sequential(nn.Embedding(50, 16), nn.Linear(16, 16), nn.Linear(16, 1030))
    models = fine_tunes(build, 2, lambda name: name.startswith("1."))
    fused = cf.fuse(models)
    head = fused.get_submodule("2")
    assert head.padded_weight.shape == (1088, 16) and head.weight.shape == (1030, 16)
    assert set(cf.unfuse(fused, 0)) == {"0.weight", "1.weight", "1.bias", "2.weight", "2.bias"}
    tokens = torch.randint(0, 50, (3, 5))
    out = fused(tokens)
    assert out.shape == (2, 3, 5, 1030)
    assert (out - torch.stack([m(tokens) for m in models])).abs().max() < 1e-12


def test_colo_estimate_counts_the_shared_frozen_weights_of_a_fused_array_once():
    import colo
    models = [m.float() for m in fine_tunes(FrozenBackboneNet, 8, lambda name: name.startswith("head"))]
    frozen_bytes = sum(p.numel() * 4 for n, p in models[0].named_parameters() if not n.startswith("head"))
    shared = colo.estimate(cf.fuse(models), torch.randn(2, 3, 32, 32), batch_size=64, optimizer="adam")
    stacked = colo.estimate(cf.fuse(models, share_frozen=False), torch.randn(2, 3, 32, 32), batch_size=64,
                            optimizer="adam")
    # seven fewer copies of the frozen weights, up to the allocator's rounding of each tensor
    assert stacked.breakdown["parameters"] - shared.breakdown["parameters"] == pytest.approx(7 * frozen_bytes, rel=0.05)
    assert shared.breakdown["activations"] < stacked.breakdown["activations"]  # the frozen prefix runs once
    assert shared.bytes < stacked.bytes


def _casts_of(run):
    """How many dtype conversions (aten::_to_copy) `run()` makes."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        run()
    return sum(event.count for event in profile.key_averages() if event.key == "aten::_to_copy")


def lora_classifier_fine_tunes(n):
    """n copies of one LoRAClassifier (float32) training their adapters and
    head, the rest frozen and equal in all of them."""
    torch.manual_seed(0)
    pretrained = LoRAClassifier()
    models = []
    for _ in range(n):
        model = copy.deepcopy(pretrained)
        for name, param in model.named_parameters():
            param.requires_grad_("lora_" in name or name.startswith("head"))
        models.append(model)
    return models


def test_under_autocast_shared_frozen_weights_are_cast_once_not_at_every_call():
    """Autocast caches casts only of weights that require grad, so it cast
    every frozen projection's weight and bias again at every call. The fused
    array casts them once; its outputs are those of autocast's own casts."""
    fused = cf.fuse(lora_classifier_fine_tunes(3))
    frozen_projections = [m for m in fused.modules() if isinstance(m, cf.frozen.CastOnceLinear)]
    assert len(frozen_projections) == 6  # q.base, k and v.base of both blocks
    plain = copy.deepcopy(fused)
    for layer in plain.modules():
        if isinstance(layer, cf.frozen.CastOnceLinear):
            layer.__class__ = nn.Linear  # autocast's own casts, at every call
    tokens = torch.randint(0, 40, (4, 6))

    def forward(model):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(tokens)

    with torch.inference_mode():  # the copies made here must serve training later
        forward(fused)
    assert torch.equal(forward(fused), forward(plain))
    assert torch.equal(fused(tokens), plain(tokens))  # outside autocast: float32 weights
    assert _casts_of(lambda: forward(plain)) - _casts_of(lambda: forward(fused)) >= 2 * len(frozen_projections)
    forward(fused).float().sum().backward()
    assert all(p.grad is not None for n, p in fused.named_parameters() if p.requires_grad)
    # A new frozen weight (load_state_dict) is cast anew.
    state = fused.state_dict()
    state["blocks.0.k.weight"] = state["blocks.0.k.weight"] * 2
    fused.load_state_dict(state)
    plain.load_state_dict(state)
    assert torch.equal(forward(fused), forward(plain))


def test_colo_estimate_of_a_fused_array_under_autocast_counts_the_cast_once_copies():
    import colo
    models = [m.float() for m in fine_tunes(FrozenBackboneNet, 4, lambda name: name.startswith("head"))]
    fused = cf.fuse(models)
    convs = [m for m in fused.modules() if isinstance(m, cf.frozen.CastOnceConv2d)]
    assert len(convs) == 2
    copies = sum(p.numel() * 2 for conv in convs for p in conv.parameters())  # bf16: 2 bytes an element
    x = torch.randn(2, 3, 32, 32)
    under = colo.estimate(fused, x, batch_size=64, optimizer="adam", autocast="bf16")
    plain = copy.deepcopy(fused)
    for conv in plain.modules():
        if isinstance(conv, cf.frozen.CastOnceConv2d):
            conv.__class__ = nn.Conv2d  # no copies kept
    without = colo.estimate(plain, x, batch_size=64, optimizer="adam", autocast="bf16")
    # each copy rounded up to the allocator's 512-byte blocks
    assert copies <= under.breakdown["parameters"] - without.breakdown["parameters"] <= copies + 4 * 512
    assert colo.estimate(fused, x, batch_size=64, optimizer="adam").breakdown["parameters"] == \
        colo.estimate(plain, x, batch_size=64, optimizer="adam").breakdown["parameters"]


def test_under_autocast_an_activation_several_projections_read_is_cast_once():
    """q, k and v, and the adapters beside them, read one activation: the
    fused graph casts it once for all of them, not once per reader. In eval
    mode the outputs are those of autocast casting it for every reader."""
    from colo.fuse.autocast_inputs import autocast_input
    fused = cf.fuse(lora_classifier_fine_tunes(3))
    casts = [n for n in fused.graph.nodes if n.op == "call_function" and n.target is autocast_input]
    # each block's input: q.base, q's adapter (through its dropout), k, v.base, v's adapter
    assert [len(n.users) for n in casts] == [5, 5]
    per_reader = copy.deepcopy(fused)
    for node in list(per_reader.graph.nodes):
        if node.op == "call_function" and node.target is autocast_input:
            node.replace_all_uses_with(node.args[0])
            per_reader.graph.erase_node(node)
    per_reader.recompile()
    tokens = torch.randint(0, 40, (4, 6))

    def forward(model):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model(tokens)

    fused.eval()
    per_reader.eval()
    assert torch.equal(forward(fused), forward(per_reader))
    assert _casts_of(lambda: forward(per_reader)) - _casts_of(lambda: forward(fused)) == 2 * 4
    assert torch.equal(fused(tokens), per_reader(tokens))  # outside autocast nothing is cast
    fused.train()
    per_reader.train()
    forward(fused).float().sum().backward()
    forward(per_reader).float().sum().backward()
    theirs = dict(per_reader.named_parameters())
    for name, mine in fused.named_parameters():
        if mine.requires_grad:  # the input's gradient now sums in bfloat16: close, not equal
            assert (mine.grad - theirs[name].grad).norm() <= 0.02 * theirs[name].grad.norm(), name
