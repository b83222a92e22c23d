"""colo.estimate on real PyTorch models, checked against hand-computed bytes."""
import json
import subprocess
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import colo

F_SDPA = getattr(F, "scaled_dot_product_attention", None)

FLOAT = 4


def parameter_bytes(model):
    """What the GPU holds for the parameters: each one its own allocation,
    rounded up to the CUDA caching allocator's 512-byte blocks."""
    return sum((p.numel() * FLOAT + 511) // 512 * 512 for p in model.parameters() if p.requires_grad)


def resident_bytes(model):
    """What model.to("cuda") puts on the GPU: every parameter (trainable,
    frozen or unused) and every buffer, each its own 512-byte-rounded block."""
    tensors = list(model.parameters()) + list(model.buffers())
    return sum(max(512, (t.numel() * t.element_size() + 511) // 512 * 512) for t in tensors)


def parameter_count(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class TinyGpt(nn.Module):
    """A GPT-2-style decoder in plain PyTorch: token and position embeddings,
    pre-norm blocks with causal self-attention, a tied language-model head."""

    def __init__(self, vocab=500, context=32, width=64, heads=4, layers=2):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Parameter(torch.zeros(context, width))
        block = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1, batch_first=True,
                                           norm_first=True, activation="gelu")
        self.blocks = nn.TransformerEncoder(block, layers)
        self.norm = nn.LayerNorm(width)
        mask = torch.triu(torch.full((context, context), float("-inf")), diagonal=1)
        self.register_buffer("causal", mask)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions[: ids.shape[1]]
        x = self.blocks(x, mask=self.causal[: ids.shape[1], : ids.shape[1]])
        return self.norm(x) @ self.tokens.weight.t()  # (batch, length, vocab)


class GatedMlp(nn.Module):
    """A custom module with functional code in forward."""

    def __init__(self):
        super().__init__()
        self.up = nn.Linear(20, 64)
        self.gate = nn.Linear(20, 64)
        self.down = nn.Linear(64, 5)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x)).clamp(-10, 10)


@pytest.mark.parametrize("optimizer,state_tensors", [("sgd", 1), ("adam", 2), ("adamw", 2)])
def test_resnet18_parameter_gradient_and_optimizer_bytes(optimizer, state_tensors):
    model = torchvision.models.resnet18(num_classes=10)
    e = colo.estimate(model, torch.randn(1, 3, 64, 64), batch_size=16, optimizer=optimizer)
    params = parameter_bytes(model)
    assert e.parameter_count == parameter_count(model)
    assert e.breakdown["parameters"] == resident_bytes(model)  # the BatchNorm statistics too
    assert e.breakdown["optimizer"] == state_tensors * params
    assert e.breakdown["gradients"] in (0, params) or e.peak_phase == "backward"
    assert e.bytes == sum(e.breakdown.values())
    assert e.breakdown["activations"] > 0
    assert e.unmodelled_ops == []


def test_activations_grow_affinely_with_the_batch():
    model = torchvision.models.mobilenet_v2(num_classes=10)
    x = torch.randn(1, 3, 64, 64)
    at = {b: colo.estimate(model, x, batch_size=b, optimizer="sgd").breakdown["activations"] for b in (16, 32, 64)}
    assert at[16] < at[32] < at[64]
    # Doubling the batch roughly doubles what the batch adds (the allocator
    # model rounds blocks, so not exactly).
    assert 1.6 < (at[64] - at[32]) / (at[32] - at[16]) < 2.4


def test_optimizer_instance_gives_its_state():
    model = GatedMlp()
    plain = colo.estimate(model, torch.randn(4, 20), optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    momentum = colo.estimate(model, torch.randn(4, 20),
                             optimizer=torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    assert plain.breakdown["optimizer"] == 0
    assert momentum.breakdown["optimizer"] == parameter_bytes(model)


def test_language_model_from_plain_pytorch():
    model = TinyGpt()
    ids = torch.randint(0, 500, (1, 32))
    e = colo.estimate(model, ids, batch_size=8, optimizer="adamw")
    params = parameter_bytes(model)
    assert e.breakdown["parameters"] == resident_bytes(model)  # the causal mask too
    assert e.breakdown["optimizer"] == 2 * params
    # The logits alone, (8, 32, 500) floats, live at the peak of a step.
    assert e.breakdown["activations"] >= 8 * 32 * 500 * FLOAT
    assert model.training, "the model's mode is restored"


def test_evaluation_pass_can_set_the_peak():
    model = GatedMlp()
    train_only = colo.estimate(model, torch.randn(1, 20), batch_size=8)
    with_eval = colo.estimate(model, torch.randn(1, 20), batch_size=8, evaluation=True, eval_batch_size=200000)
    assert with_eval.peak_phase == "evaluation"
    assert with_eval.bytes > train_only.bytes


def test_several_inputs_and_a_custom_loss():
    class TwoTower(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(10, 16)
            self.b = nn.Embedding(30, 16)

        def forward(self, x, ids):
            return {"score": (self.a(x) * self.b(ids)).sum(-1)}

    model = TwoTower()
    e = colo.estimate(model, (torch.randn(1, 10), torch.tensor([3])), batch_size=64,
                      loss=lambda out: out["score"].square().mean())
    assert e.breakdown["parameters"] == parameter_bytes(model)


def test_unknown_autograd_function_is_named_with_its_rule():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * grad

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return Cube.apply(self.fc(x))

    e = colo.estimate(Model(), torch.randn(2, 8))
    assert any("Cube" in op for op in e.unmodelled_ops)
    assert "assumed" in e.rule and "Cube" in str(e)


def test_forward_that_raises_is_reported_as_the_models_error():
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 2)

        def forward(self, x):
            raise KeyError("no such head: 'classifier'")

    with pytest.raises(KeyError, match="no such head"):
        colo.estimate(Broken(), torch.randn(1, 4))


def test_inputs_of_the_wrong_shape_raise():
    with pytest.raises(RuntimeError, match="shape|size"):
        colo.estimate(nn.Linear(10, 3), torch.randn(1, 7))


@pytest.mark.parametrize("kwargs,error", [
    ({"optimizer": "lion"}, ValueError),
    ({"batch_size": 0}, ValueError),
    ({"autocast": "int8"}, ValueError),
    ({"optimizer": 3}, TypeError),
])
def test_bad_arguments_are_named(kwargs, error):
    with pytest.raises(error, match="colo.estimate"):
        colo.estimate(nn.Linear(4, 2), torch.randn(1, 4), **kwargs)


def test_not_a_module_is_rejected():
    with pytest.raises(TypeError, match="nn.Module"):
        colo.estimate(lambda x: x, torch.randn(1, 4))


def test_torchscript_file_gets_the_same_estimate_from_the_cli(tmp_path, colo_executable):
    model = GatedMlp()
    path = tmp_path / "gated.pt"
    torch.jit.trace(model, torch.randn(2, 20)).save(str(path))
    run = subprocess.run([colo_executable, "estimate", "--torchscript", str(path), "--input", "20",
                          "--batch", "256", "--optimizer", "adam", "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    cli = json.loads(run.stdout)[0]
    py = colo.estimate(model, torch.randn(1, 20), batch_size=256, optimizer="adam")
    assert cli["breakdown"]["parameters"] == py.breakdown["parameters"]
    assert cli["breakdown"]["optimizer"] == py.breakdown["optimizer"]
    assert abs(cli["bytes"] - py.bytes) <= 0.02 * py.bytes


def test_cli_rejects_a_file_that_is_not_torchscript(tmp_path, colo_executable):
    bogus = tmp_path / "weights.pt"
    bogus.write_bytes(b"not a model")
    run = subprocess.run([colo_executable, "estimate", "--torchscript", str(bogus), "--input", "3x32x32"],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert str(bogus) in run.stderr and "TorchScript" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_cli_rejects_a_malformed_input_shape(tmp_path, colo_executable):
    path = tmp_path / "m.pt"
    torch.jit.trace(nn.Linear(4, 2), torch.randn(1, 4)).save(str(path))
    run = subprocess.run([colo_executable, "estimate", "--torchscript", str(path), "--input", "3xbig"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--input" in run.stderr


@pytest.mark.skipif(not hasattr(F, "scaled_dot_product_attention"), reason="torch 2.x's fused attention")
def test_attention_is_recorded_as_the_gpus_fused_kernels_keep_it():
    layer = nn.TransformerEncoderLayer(32, 8, 64, dropout=0.0, batch_first=True)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = layer
            self.head = nn.Linear(32, 3)

        def forward(self, x):
            n = x.shape[1]
            mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
            return self.head(self.layer(x, src_mask=mask).mean(1))

    short, long = (colo.estimate(Encoder(), torch.randn(1, n, 32), batch_size=4, optimizer="sgd")
                   for n in (256, 512))
    assert short.unmodelled_ops == [] and long.unmodelled_ops == []
    # Doubling the sequence doubles what is kept; the sequence x sequence
    # weights (8 heads x 512 x 512 per sample) would quadruple it.
    assert long.breakdown["activations"] < 2.6 * short.breakdown["activations"]


def test_pow_by_a_number_has_a_rule():
    class TanhGelu(nn.Module):
        """GPT-2's GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            h = self.fc(x)
            h = 0.5 * h * (1.0 + torch.tanh(0.7978845608 * (h + 0.044715 * torch.pow(h, 3.0))))
            return self.head(h)

    assert colo.estimate(TanhGelu(), torch.randn(1, 16)).unmodelled_ops == []


def test_multiplying_by_a_number_keeps_nothing_and_a_mask_keeps_only_the_mask():
    """Autograd keeps an operand of x * y only for the other one's gradient:
    x * 0.5 keeps nothing of x, and dropout's x * mask keeps the mask (one
    byte per element on the GPU), not x."""

    class Chain(nn.Module):
        def __init__(self, scaled):
            super().__init__()
            self.fc = nn.Linear(256, 1024)
            self.head = nn.Linear(1024, 10)
            self.scaled = scaled

        def forward(self, x):
            h = torch.tanh(self.fc(x))
            if self.scaled:
                h = h * 0.5 * 2.0 * 0.25 * 4.0  # four temporaries, none kept for backward
            return self.head(h)

    batch = 4096  # 16 MiB tensors: allocations of their own, not 20 MiB pool blocks
    one_tensor = batch * 1024 * FLOAT
    rounding = 2 << 20
    plain = colo.estimate(Chain(False), torch.randn(1, 256), batch_size=batch, optimizer="sgd")
    scaled = colo.estimate(Chain(True), torch.randn(1, 256), batch_size=batch, optimizer="sgd")
    # Were the scaled inputs kept, four more tensors would live at the peak.
    assert scaled.bytes - plain.bytes <= one_tensor + rounding

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(256, 1024)
            self.head = nn.Linear(1024, 10)

        def forward(self, x):
            h = torch.tanh(self.fc(x))
            mask = (torch.rand_like(h) > 0.5).float()
            return self.head(h * mask)

    masked = colo.estimate(Masked(), torch.randn(1, 256), batch_size=batch, optimizer="sgd")
    # The product (kept by head) plus a one-byte mask per element, not h again.
    assert plain.bytes < masked.bytes <= plain.bytes + one_tensor // 4 + one_tensor + rounding


def test_a_loop_that_lets_the_output_go_before_backward_needs_less():
    """`loss = f(model(x))` frees the logits before backward; `out = model(x)`
    holds them. For a language model they are batch x tokens x vocab."""
    model = TinyGpt(vocab=8000, context=32, width=16, heads=2, layers=1)
    ids = torch.randint(0, 8000, (1, 32))
    held = colo.estimate(model, ids, batch_size=16, optimizer="sgd")
    freed = colo.estimate(model, ids, batch_size=16, optimizer="sgd", keep_output=False)
    logits = 16 * 32 * 8000 * FLOAT
    assert held.bytes - freed.bytes >= 0.9 * logits


def test_frozen_parameters_and_buffers_are_on_the_gpu_too():
    """A frozen backbone (requires_grad False) has no gradient or optimizer
    state and is not in the autograd graph, but model.to("cuda") still puts
    its weights on the GPU, and every buffer with them. colo.estimate counted
    only the trainable parameters the graph reaches: a frozen ResNet-18 with
    a trainable head came out 44 MB short, a 64 MiB buffer was left out."""
    model = torchvision.models.resnet18(num_classes=10)
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith("fc.")
    model.register_buffer("table", torch.zeros(4096, 4096))
    e = colo.estimate(model, torch.randn(1, 3, 32, 32), batch_size=8, optimizer="adam")
    head = parameter_bytes(model)  # fc only
    assert e.breakdown["parameters"] == resident_bytes(model) > 100 * head
    assert e.breakdown["gradients"] <= head
    assert e.breakdown["optimizer"] == 2 * head
    assert e.bytes == sum(e.breakdown.values())
    trainable = colo.estimate(model.fc, torch.randn(1, 512), batch_size=8, optimizer="adam")
    assert e.bytes - trainable.bytes >= resident_bytes(model) - head


def test_every_input_is_data_on_the_gpu():
    """Only the first example input was counted as data; a second input of
    100,000 floats per sample (100 MB at batch 256) was left out."""
    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(10, 10)
            self.b = nn.Linear(100000, 10)

        def forward(self, x, y):
            return self.a(x) + self.b(y)

    model = TwoInputs()
    e = colo.estimate(model, (torch.randn(1, 10), torch.randn(1, 100000)), batch_size=256, optimizer="sgd")
    assert e.breakdown["data"] >= 256 * (100000 + 10) * FLOAT
    assert e.bytes == sum(e.breakdown.values())


@pytest.mark.parametrize("eval_batch_size", [-5, 0, 2.5, True])
def test_a_bad_evaluation_batch_is_named(eval_batch_size):
    """eval_batch_size=2.5 gave pybind11's 'incompatible function arguments'
    and -5 a bare 'evaluation batch size must be 0 or more'."""
    with pytest.raises(ValueError, match="^colo.estimate: eval_batch_size"):
        colo.estimate(GatedMlp(), torch.randn(1, 20), evaluation=True, eval_batch_size=eval_batch_size)


def test_adam_with_amsgrad_keeps_a_third_buffer_per_trainable_parameter():
    model = torch.nn.Sequential(torch.nn.Linear(1000, 1000), torch.nn.ReLU(), torch.nn.Linear(1000, 10))
    example = torch.randn(1, 1000)
    plain = colo.estimate(model, example, batch_size=8, optimizer=torch.optim.Adam(model.parameters()))
    ams = colo.estimate(model, example, batch_size=8, optimizer=torch.optim.Adam(model.parameters(), amsgrad=True))
    gradients = plain.breakdown["gradients"]
    assert plain.breakdown["optimizer"] == 2 * gradients  # exp_avg and exp_avg_sq
    assert ams.breakdown["optimizer"] == 3 * gradients    # and max_exp_avg_sq
    assert ams.bytes == plain.bytes + gradients


def test_the_parameter_count_counts_elements_whatever_their_dtype():
    model = torch.nn.Sequential(torch.nn.Linear(100, 200), torch.nn.ReLU(), torch.nn.Linear(200, 10))
    count = sum(p.numel() for p in model.parameters())
    assert colo.estimate(model, torch.randn(1, 100), batch_size=4).parameter_count == count
    half = model.to(torch.bfloat16)
    assert colo.estimate(half, torch.randn(1, 100, dtype=torch.bfloat16), batch_size=4).parameter_count == count


def test_a_torchscript_file_counts_its_frozen_weights_and_buffers_as_colo_estimate_does(tmp_path, colo_executable):
    model = nn.Sequential(nn.Linear(20, 512), nn.BatchNorm1d(512), nn.ReLU(), nn.Linear(512, 10))
    for p in model[0].parameters():  # a frozen first layer, as a fine-tuned backbone's
        p.requires_grad_(False)
    model.register_buffer("table", torch.zeros(1 << 20))  # 4 MiB no parameter holds
    path = tmp_path / "frozen.pt"
    torch.jit.trace(model.eval(), torch.randn(2, 20)).save(str(path))
    model.train()
    run = subprocess.run([colo_executable, "estimate", "--torchscript", str(path), "--input", "20",
                          "--batch", "64", "--optimizer", "adam", "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    cli = json.loads(run.stdout)[0]
    py = colo.estimate(model, torch.randn(1, 20), batch_size=64, optimizer="adam")
    assert cli["breakdown"]["parameters"] == py.breakdown["parameters"] >= (1 << 22)
    assert cli["breakdown"]["optimizer"] == py.breakdown["optimizer"]


def test_a_frozen_backbones_forward_is_on_the_gpu_while_it_runs():
    """Layers outside autograd save nothing for backward, but each one's
    input and output are on the GPU while the forward runs through it: the
    stem of a frozen ResNet-18 at 128 x 224 px holds 2 x 411 MB at once."""
    model = torchvision.models.resnet18(num_classes=10)
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith("fc."))
    example = torch.randn(1, 3, 224, 224)
    frozen = colo.estimate(model, example, batch_size=128, optimizer="adam")
    stem = 128 * 64 * 112 * 112 * 4
    assert frozen.breakdown["activations"] >= 2 * stem
    assert frozen.bytes >= frozen.breakdown["parameters"] + 2 * stem
    # A model with no layer outside autograd is estimated as before.
    for p in model.parameters():
        p.requires_grad_(True)
    trainable = colo.estimate(model, example, batch_size=128, optimizer="adam")
    assert trainable.peak_phase != "forward" or trainable.breakdown["gradients"] > 0
    assert trainable.bytes > frozen.bytes


def test_a_frozen_forwards_peak_holds_the_libraries_workspaces_not_the_replays_convolution_workspace():
    """At a forward peak inside a frozen backbone, the convolutions'
    workspaces are the forward's own (in `activations`); beside them the job
    holds only the CUDA libraries' workspaces. The replay's figure (a
    trainable block's backward convolution workspace, its free blocks) was
    counted on top: ResNet-34 with layer4 trainable came out 11% over an
    H100's peak, 5% after."""
    from colo import _core
    model = torchvision.models.resnet34(num_classes=10)
    for name, p in model.named_parameters():
        p.requires_grad_(name.startswith(("layer4.", "fc.")))
    e = colo.estimate(model, torch.randn(1, 3, 224, 224), batch_size=64, optimizer="adam")
    assert e.peak_phase == "forward"
    assert e.breakdown["workspace"] == _core.library_workspace("h100")
    assert e.bytes == sum(e.breakdown.values())


class DropoutAfterFrozenEmbedding(nn.Module):
    """A frozen embedding (a forward outside autograd), then trainable layers
    with a dropout between them, as a LoRA adapter's input has."""

    def __init__(self, p):
        super().__init__()
        self.emb = nn.Embedding(1000, 1024)
        self.emb.requires_grad_(False)
        self.a, self.b, self.head = nn.Linear(1024, 1024), nn.Linear(1024, 1024), nn.Linear(1024, 10)
        self.drop = nn.Dropout(p)

    def forward(self, ids):
        return self.head(self.b(self.drop(self.a(self.emb(ids)))).mean(1))


def test_a_dropout_mask_is_one_byte_an_element_in_a_forward_outside_autograd_too():
    """The GPU's dropout keeps a one-byte mask for backward; the CPU's keeps
    a float32 noise tensor. The forward followed outside autograd counted the
    CPU's: 3.9 bytes an element more than no dropout here (LoRA rows 9-22%
    over an H100's peak), 1 byte now."""
    ids = torch.randint(0, 1000, (1, 512))
    elements = 64 * 512 * 1024
    dropped = colo.estimate(DropoutAfterFrozenEmbedding(0.1), ids, batch_size=64, optimizer="sgd")
    plain = colo.estimate(DropoutAfterFrozenEmbedding(0.0), ids, batch_size=64, optimizer="sgd")
    assert elements // 2 <= dropped.bytes - plain.bytes <= 2 * elements


def test_autocast_keeps_a_low_precision_copy_of_the_batch_for_a_trainable_first_layer():
    """Under autocast the first convolution runs on a bf16 copy of the float32
    batch and keeps it for its weight's gradient (an H200 trace of
    ShuffleNetV2 bf16 at batch 256: 74 MiB, live through the backward). A
    frozen first layer keeps nothing."""
    def net():
        return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 64 * 64, 10))

    x, batch = torch.randn(1, 3, 64, 64), 256
    copy = batch * 3 * 64 * 64 * 2
    plain = colo.estimate(net(), x, batch_size=batch, optimizer="sgd")
    mixed = colo.estimate(net(), x, batch_size=batch, optimizer="sgd", autocast="bf16")
    assert mixed.breakdown["data"] - plain.breakdown["data"] == copy
    frozen = net()
    frozen[0].requires_grad_(False)
    assert colo.estimate(frozen, x, batch_size=batch, optimizer="sgd", autocast="bf16").breakdown["data"] == \
        plain.breakdown["data"]


class HardActivations(nn.Module):
    """MobileNets' ReLU6 (in place), hard-swish and hard-sigmoid, LeakyReLU, and an RMS norm's rsqrt."""

    def __init__(self, width=256):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(width, width), nn.Linear(width, width), nn.Linear(width, 10)

    def forward(self, x):
        h = nn.functional.relu6(self.a(x), inplace=True)
        h = nn.functional.hardswish(h) * nn.functional.hardsigmoid(h)
        h = nn.functional.leaky_relu(self.b(h), 0.1)
        return self.c(h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6))


def test_hard_activations_and_rsqrt_have_rules():
    """Each keeps one tensor for backward: an op without a rule is assumed to
    keep its inputs and outputs, which put MobileNetV2's checkpointed
    training 16% over an H100's peak (its ReLU6s, recomputed)."""
    e = colo.estimate(HardActivations(), torch.randn(1, 256), batch_size=64, optimizer="sgd")
    assert e.unmodelled_ops == []


class FrozenResidual(nn.Module):
    """Two frozen linear layers with a shortcut around them, then a trainable
    head: while the shortcut adds, the block's input, its first layer's
    output (held by the name `h`) and the second's are alive at once."""

    def __init__(self, width):
        super().__init__()
        self.a, self.b = nn.Linear(width, width), nn.Linear(width, width)
        self.a.requires_grad_(False)
        self.b.requires_grad_(False)
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        h = self.a(x)
        h2 = self.b(h)
        return self.head(x + h2)


def test_a_frozen_forward_counts_what_the_models_code_holds_not_only_one_layers_input_and_output():
    """The residual's input and the block's intermediate outputs are alive
    while the shortcut adds: three tensors beside the batch, not the two a
    single layer holds. Under autocast the copies of the frozen weights in
    bf16 do not grow with the batch."""
    width, batch = 1024, 1024
    tensor = batch * width * 4
    model = FrozenResidual(width)
    e = colo.estimate(model, torch.randn(1, width), batch_size=batch, optimizer="sgd")
    assert e.peak_phase == "forward"
    assert 3 * tensor <= e.breakdown["activations"] <= 3 * tensor + 20 * 2**20  # one 20 MiB segment at most
    mixed = colo.estimate(model, torch.randn(1, width), batch_size=batch, optimizer="sgd", autocast="bf16")
    weights = 2 * width * width * 2
    assert mixed.breakdown["activations"] <= e.breakdown["activations"]
    assert mixed.breakdown["activations"] < 3 * tensor // 2 + weights * 2 + 20 * 2**20


class SmallConvNet(nn.Module):
    """Convolution, batch norm, layer norm, GELU and linear layers."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 32, 3, padding=1)
        self.bn = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 16 * 16, 512)
        self.norm = nn.LayerNorm(512)
        self.head = nn.Linear(512, 10)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x))).flatten(1)
        return self.head(F.gelu(self.norm(self.fc(h))))


def test_a_float16_model_is_estimated_as_the_bfloat16_model_of_the_same_sizes():
    """torch 1.13's CPU has no float16 kernels ("addmm_impl_cpu_" not
    implemented for 'Half'), so a model.half() could not be estimated
    without a GPU. colo records it as bfloat16, whose element is as large:
    the estimate is the bfloat16 model's, about half the float32 one's for
    parameters, optimizer state and activations; the model comes back as it
    was."""
    import copy

    base = SmallConvNet()
    x = torch.randn(1, 3, 16, 16)
    fp32 = colo.estimate(base, x, batch_size=256, optimizer="adam")
    bf16 = colo.estimate(copy.deepcopy(base).bfloat16(), x.bfloat16(), batch_size=256, optimizer="adam")
    half = copy.deepcopy(base).half()
    weight, values = half.fc.weight, half.fc.weight.detach().clone()
    half.fc.weight.grad = torch.ones_like(half.fc.weight)
    optimizer = torch.optim.Adam(half.parameters())
    fp16 = colo.estimate(half, x.half(), batch_size=256, optimizer=optimizer)
    assert fp16.bytes == bf16.bytes
    assert fp16.breakdown == bf16.breakdown
    assert fp16.peak_phase == bf16.peak_phase and fp16.unmodelled_ops == bf16.unmodelled_ops == []
    assert fp16.parameter_count == fp32.parameter_count
    assert fp16.breakdown["parameters"] == resident_bytes(half)
    assert abs(fp16.breakdown["parameters"] - fp32.breakdown["parameters"] / 2) <= 512 * 20
    assert abs(fp16.breakdown["optimizer"] - fp32.breakdown["optimizer"] / 2) <= 512 * 20
    assert 0.4 < fp16.breakdown["activations"] / fp32.breakdown["activations"] < 0.6
    # The model is given back in float16: the same parameter objects, values and gradients.
    assert half.fc.weight is weight and weight.dtype == torch.float16 and torch.equal(weight, values)
    assert weight.grad.dtype == torch.float16 and bool((weight.grad == 1).all())
    assert all(t.dtype == torch.float16 for t in list(half.parameters()) + [half.bn.running_mean])


def test_float16_autocast_is_estimated_as_bfloat16_autocast():
    """CPU autocast in torch 1.13 takes only bfloat16: autocast="fp16"
    raised "AutocastCPU only support Bfloat16". Both cast the same ops to
    two-byte elements, so the estimates are the same. (No LayerNorm: 1.13's
    CPU layer_norm under bfloat16 autocast fails on its float32 weight.)"""
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.Flatten(),
                          nn.Linear(32 * 16 * 16, 512), nn.GELU(), nn.Linear(512, 10))
    x = torch.randn(1, 3, 16, 16)
    fp16 = colo.estimate(model, x, batch_size=1024, autocast="fp16")
    bf16 = colo.estimate(model, x, batch_size=1024, autocast="bf16")
    plain = colo.estimate(model, x, batch_size=1024)
    assert fp16.bytes == bf16.bytes and fp16.breakdown == bf16.breakdown
    assert fp16.breakdown["parameters"] == plain.breakdown["parameters"]  # float32 weights under autocast
    assert 0.4 < fp16.breakdown["activations"] / plain.breakdown["activations"] < 0.6


def test_a_model_whose_graph_reaches_every_parameter_is_not_run_again_to_look_for_hidden_ones(monkeypatch):
    """The search for parameters beyond the recorded graph (reentrant
    checkpoints) costs a forward and a backward; a model whose recorded
    graph reaches every trainable parameter does not pay it."""
    estimate_module = sys.modules["colo.estimate"]  # colo.estimate is also the function

    def refuse(*_args, **_kwargs):
        raise AssertionError("searched for hidden parameters of a model whose graph reaches them all")
    monkeypatch.setattr(estimate_module, "_parameters_beyond_the_graph", refuse)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    assert colo.estimate(model, torch.randn(1, 16), batch_size=8).bytes > 0


def test_parameters_inside_a_reentrant_checkpoint_have_gradients_and_optimizer_state():
    """torch.utils.checkpoint(use_reentrant=True) runs its segment without
    autograd and reruns it in backward, so the recorded graph reaches none
    of the segment's parameters: a 16 MiB checkpointed MLP came out with
    1 MiB of SGD momentum instead of 17 MiB. Its parameters now have their
    gradients and optimizer state, as without the checkpoint."""
    import torch.utils.checkpoint as checkpoint

    class Segmented(nn.Module):
        def __init__(self, reentrant):
            super().__init__()
            self.stem = nn.Linear(256, 1024)
            self.body = nn.Sequential(*[m for _ in range(4) for m in (nn.Linear(1024, 1024), nn.Tanh())])
            self.head = nn.Linear(1024, 5)
            self.reentrant = reentrant

        def forward(self, x):
            h = self.stem(x)
            h = self.body(h) if self.reentrant is None else checkpoint.checkpoint(self.body, h,
                                                                                 use_reentrant=self.reentrant)
            return self.head(h)

    x = torch.randn(1, 256)
    for reentrant in (None, True, False):
        model = Segmented(reentrant)
        model.body[0].weight.grad = torch.full_like(model.body[0].weight, 3.0)
        e = colo.estimate(model, x, batch_size=1024, optimizer="sgd", zero_grad="after_forward")
        assert e.breakdown["optimizer"] == parameter_bytes(model), reentrant
        assert e.breakdown["gradients"] in (0, parameter_bytes(model)) or \
            e.breakdown["gradients"] >= parameter_bytes(model.body), reentrant
        assert e.bytes == sum(e.breakdown.values())
        assert bool((model.body[0].weight.grad == 3.0).all()) and model.stem.weight.grad is None
    adam = colo.estimate(Segmented(True), x, batch_size=1024, optimizer="adam")
    assert adam.breakdown["optimizer"] == 2 * parameter_bytes(model)


def test_an_in_place_op_takes_no_new_memory():
    """nn.ReLU(inplace=True) and `y += x` write into their input: on the GPU
    their result is no new allocation. colo allocated one, which changed how
    the replayed allocator split its cached blocks: on 66 rows of issue 50's
    validation (torchvision and custom models, estimated on the CPU against
    the H100's truth) the median error went 6.57% -> 3.92% with in-place ops
    modelled, rows under by more than 5% 28 -> 19."""
    layer_output = 4096 * 2048 * 4  # 32 MiB

    def relus(inplace):
        return nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(2048, 2048), nn.ReLU(inplace=inplace))],
                             nn.Linear(2048, 10))

    class Residual(nn.Module):
        def __init__(self, inplace):
            super().__init__()
            self.a, self.b, self.inplace = nn.Linear(2048, 2048), nn.Linear(2048, 2048), inplace

        def forward(self, x):
            y = self.b(torch.tanh(self.a(x)))
            if self.inplace:
                y += x
                return y
            return y + x

    def residuals(inplace):
        return nn.Sequential(*[Residual(inplace) for _ in range(4)], nn.Linear(2048, 10))

    x = torch.randn(1, 2048)
    for build in (relus, residuals):
        # zero_grad after the forward, as colo's trainer: the forward's blocks are not last
        # step's gradients' (with those free, both reuse them and peak alike).
        copied = colo.estimate(build(False), x, batch_size=4096, optimizer="sgd", zero_grad="after_forward")
        in_place = colo.estimate(build(True), x, batch_size=4096, optimizer="sgd", zero_grad="after_forward")
        assert in_place.bytes <= copied.bytes - layer_output, (build.__name__, in_place, copied)
        assert in_place.breakdown["activations"] >= 4 * layer_output  # what backward needs is still kept


def test_a_linear_layer_with_a_frozen_weight_keeps_no_input():
    """Autograd keeps a Linear's input only for its weight's gradient, so a
    frozen Linear that gradients pass through (a LoRA adapter's base layer, a
    frozen block before a trainable one) keeps none. colo kept it: LoRA rows
    of issue 50's validation came out 15% to 32% high on an H100."""
    model = nn.Sequential(nn.Linear(256, 2048), *[nn.Linear(2048, 2048) for _ in range(6)], nn.Linear(2048, 10))
    for layer in model[1:7]:
        layer.requires_grad_(False)
    e = colo.estimate(model, torch.randn(1, 256), batch_size=4096, optimizer="sgd")
    layer_output = 4096 * 2048 * 4  # 32 MiB; six frozen layers' inputs would be 192 MiB
    assert e.breakdown["activations"] < 3 * layer_output, e
    trainable = colo.estimate(nn.Sequential(*[nn.Linear(2048, 2048) for _ in range(6)]), torch.randn(1, 2048),
                              batch_size=4096, optimizer="sgd")
    assert trainable.breakdown["activations"] >= 5 * layer_output, trainable  # each keeps its input


class _CheckpointedBlocks(nn.Module):
    """Eight 1024-4096-1024 GELU blocks and a head; each block under
    torch.utils.checkpoint with use_reentrant=`reentrant`, or plain for None."""

    def __init__(self, reentrant):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
                                    for _ in range(8))
        self.head = nn.Linear(1024, 10)
        self.reentrant = reentrant

    def forward(self, x):
        import torch.utils.checkpoint as checkpoint

        for block in self.blocks:
            x = block(x) if self.reentrant is None else checkpoint.checkpoint(block, x, use_reentrant=self.reentrant)
        return self.head(x)


def test_non_reentrant_checkpoints_keep_their_inputs_and_recompute_one_block_at_a_time():
    """torch.utils.checkpoint(use_reentrant=False) keeps each checkpointed
    block's input and recomputes the block's saved tensors in its backward.
    colo estimated such a model as if every activation were kept (H100: +44%
    to +150% on 6 rows of issue 50's validation). Eight 1024-4096-1024 blocks
    at batch 2048 save 9,216 floats a sample each without checkpoints (72
    MiB a block); checkpointed, the blocks' inputs (8 MiB each) plus one
    block's recomputed tensors at a time."""
    import torch.utils.checkpoint as checkpoint

    x = torch.randn(1, 1024)
    plain = colo.estimate(_CheckpointedBlocks(None), x, batch_size=2048, optimizer="sgd")
    checkpointed = colo.estimate(_CheckpointedBlocks(False), x, batch_size=2048, optimizer="sgd")
    mib = 2 ** 20
    block_saved = 2048 * (1024 + 4096 + 4096) * 4
    assert plain.breakdown["activations"] >= 8 * block_saved
    # inputs kept (8 x 8 MiB), one block recomputed (72 MiB), its gradients in flight (< 2 blocks' worth)
    assert checkpointed.breakdown["activations"] < 8 * 8 * mib + 3 * block_saved, checkpointed
    assert checkpointed.breakdown["activations"] >= block_saved, checkpointed
    assert checkpointed.bytes < plain.bytes - 4 * block_saved
    assert checkpointed.bytes_high >= checkpointed.bytes
    worker = (getattr(checkpoint, "_checkpoint_without_reentrant_generator", None)
              or checkpoint._checkpoint_without_reentrant)
    assert worker.__name__ != "noted"  # the checkpoint is torch's own again


def test_a_reentrant_checkpoint_is_modelled_as_the_non_reentrant_kind():
    """A reentrant checkpoint (use_reentrant=True, torch 1.13's default) runs
    its segment without autograd and reruns it with autograd in backward:
    memory-wise what the non-reentrant kind does. colo kept none of the
    segment's tensors (H100: MobileNetV2 -35%, with a high bound of the step
    without checkpointing, +145%). The recording now runs each segment as
    plain code and notes its nodes, so both kinds get the same estimate;
    checkpoint works as before afterwards."""
    x = torch.randn(1, 1024)
    plain = colo.estimate(_CheckpointedBlocks(None), x, batch_size=2048, optimizer="sgd")
    reentrant = colo.estimate(_CheckpointedBlocks(True), x, batch_size=2048, optimizer="sgd")
    non_reentrant = colo.estimate(_CheckpointedBlocks(False), x, batch_size=2048, optimizer="sgd")
    block_saved = 2048 * (1024 + 4096 + 4096) * 4
    assert reentrant.bytes == non_reentrant.bytes, (reentrant, non_reentrant)
    assert reentrant.bytes < plain.bytes - 4 * block_saved
    assert reentrant.breakdown["optimizer"] == plain.breakdown["optimizer"]  # every block's momentum
    assert "reentrant" not in reentrant.rule and not reentrant.unmodelled_ops
    out = _CheckpointedBlocks(True)(torch.randn(3, 1024).requires_grad_())
    head_inputs = [type(f).__name__ for f, _ in out.grad_fn.next_functions]
    assert "CheckpointFunctionBackward" in head_inputs, head_inputs  # the checkpoint is a checkpoint again


def test_a_model_on_the_meta_device_is_refused_with_what_to_do_instead_of_an_estimate_without_weights():
    """A model built on the meta device (too big for the CPU's memory) came
    out at 0.81 GiB, its weights, gradients and activations all 0 MiB: colo
    now refuses it and says what to do."""
    with pytest.raises(ValueError, match="meta device.*'0.weight'.*build the model on the CPU"):
        colo.estimate(nn.Sequential(nn.Linear(8, 4)).to("meta"), torch.randn(1, 8), batch_size=4)


def test_a_forward_that_needs_a_gpu_is_named_as_such_with_the_models_error_chained():
    """colo runs the step on the CPU: a forward that moves its input to CUDA
    failed with torch's bare `Torch not compiled with CUDA enabled`."""

    class ToCuda(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = nn.Linear(8, 4)

        def forward(self, x):
            return self.layer(x.to("cuda"))

    with pytest.raises(RuntimeError, match="needs a GPU") as raised:
        colo.estimate(ToCuda(), torch.randn(1, 8), batch_size=4)
    assert raised.value.__cause__ is not None and "cuda" in str(raised.value.__cause__).lower()


def test_recurrent_layers_have_rules_for_every_op():
    """nn.LSTM and nn.GRU (the CPU path) split each step's gates with
    unsafe_split, a view that saves nothing: no op is left unmodelled, and the
    estimate grows with the sequence as the saved gates do."""

    class Recurrent(nn.Module):
        def __init__(self, cell):
            super().__init__()
            self.rnn = cell(32, 64, batch_first=True)
            self.head = nn.Linear(64, 4)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[:, -1])

    for cell in (nn.LSTM, nn.GRU):
        short = colo.estimate(Recurrent(cell), torch.randn(8, 10, 32))
        long = colo.estimate(Recurrent(cell), torch.randn(8, 40, 32))
        assert short.unmodelled_ops == [] and long.unmodelled_ops == [], (cell, long.unmodelled_ops)
        grown = long.breakdown["activations"], short.breakdown["activations"]
        assert grown[0] > 2 * grown[1], (cell, grown)


def test_a_bf16_batch_is_counted_at_two_bytes_an_element():
    """The batch on the GPU takes the input's element size: a bf16 model fed
    bf16 images holds half the data bytes of the same model in float32."""
    def model():
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 30 * 30, 4))

    fp32 = colo.estimate(model(), torch.randn(1, 3, 32, 32), batch_size=64)
    bf16 = colo.estimate(model().to(torch.bfloat16), torch.randn(1, 3, 32, 32, dtype=torch.bfloat16), batch_size=64)
    assert fp32.breakdown["data"] > 0
    assert abs(bf16.breakdown["data"] - fp32.breakdown["data"] / 2) <= 1024, (bf16.breakdown, fp32.breakdown)


def test_estimating_leaves_the_models_batchnorm_statistics_as_they_were():
    """colo runs the model in training mode on random samples; a pretrained
    model's running statistics must not drift for it."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 2))
    with torch.no_grad():
        model[1].running_mean.fill_(0.5)
        model[1].running_var.fill_(2.0)
    before = {name: b.clone() for name, b in model.named_buffers()}
    colo.estimate(model, torch.randn(1, 3, 8, 8), batch_size=8)
    for name, b in model.named_buffers():
        assert torch.equal(b, before[name]), (name, before[name], b)


def test_an_estimate_uses_the_threads_it_is_given_and_gives_the_rest_back():
    seen = []

    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x):
            seen.append(torch.get_num_threads())
            return self.fc(x)

    torch.set_num_threads(3)
    try:
        colo.estimate(Counting(), torch.randn(2, 8), threads=1)
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 3
        with pytest.raises(ValueError, match="threads"):
            colo.estimate(Counting(), torch.randn(2, 8), threads=0)
    finally:
        torch.set_num_threads(1)  # conftest's setting for the rest of the suite


def test_gradients_kept_between_backwards_are_all_live_in_the_next_one():
    """zero_grad(set_to_none=False), torch 1.x's default, and gradient
    accumulation keep every gradient allocated: a backward holds all of them
    from its start (with accumulation, every micro-batch's but a step's
    first, which colo replays one by one). With set_to_none (2.x's default)
    they come one by one."""
    model = TinyGpt(vocab=8000, context=32, width=64, heads=2, layers=2)
    ids = torch.randint(0, 8000, (1, 32))
    trainable = parameter_bytes(model)
    freed = colo.estimate(model, ids, batch_size=4, optimizer="sgd", zero_grad="after_forward")
    kept = colo.estimate(model, ids, batch_size=4, optimizer="sgd", set_to_none=False)
    accumulated = colo.estimate(model, ids, batch_size=4, optimizer="sgd", accumulation_steps=4)
    assert kept.peak_phase == "backward"
    assert kept.breakdown["gradients"] >= trainable
    assert kept.bytes > freed.bytes
    assert accumulated.peak_phase == "backward"
    assert accumulated.breakdown["gradients"] >= trainable
    assert freed.breakdown["gradients"] < trainable
    assert accumulated.bytes >= freed.bytes
    for bad in ({"accumulation_steps": 0}, {"accumulation_steps": 1.5}, {"set_to_none": "no"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            colo.estimate(model, ids, batch_size=4, **bad)


def test_zero_grad_before_the_forward_frees_last_steps_gradients_for_it():
    """A plain loop (zero_grad, forward, backward, step) runs its forward
    without last step's gradients; Lightning's closure (forward, zero_grad,
    backward) runs it beside them. A model whose weights dwarf its
    activations peaks in the forward with them: a GPT-2-size LM at batch 8
    came out 17% over an H100's peak."""
    width = 2048  # 8 layers' weights (128 MiB), then a head whose output and log-softmax take 128 MiB each
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(8)], nn.Linear(width, 8192))
    x = torch.randn(1, width)
    weights = parameter_bytes(model)
    plain = colo.estimate(model, x, batch_size=4096, optimizer="sgd")
    after = colo.estimate(model, x, batch_size=4096, optimizer="sgd", zero_grad="after_forward")
    assert after.bytes - plain.bytes >= weights // 2
    assert colo.estimate(model, x, batch_size=4096, optimizer="sgd", zero_grad="before_forward").bytes == plain.bytes

    class LightningLike(nn.Sequential):  # a LightningModule, as colo recognises one: by its package
        pass
    LightningLike.__module__ = "lightning.pytorch.core.module"
    lightning = LightningLike(*model)
    assert colo.estimate(lightning, x, batch_size=4096, optimizer="sgd").bytes == after.bytes
    # colo.fuse.Trainer zeroes after its forward too.
    from colo.fuse import fuse
    fused = fuse(lambda: nn.Sequential(*[nn.Linear(width, width) for _ in range(8)], nn.Linear(width, 8192)), 2)
    assert colo.estimate(fused, x, batch_size=2048, optimizer="sgd").bytes == \
        colo.estimate(fused, x, batch_size=2048, optimizer="sgd", zero_grad="after_forward").bytes != \
        colo.estimate(fused, x, batch_size=2048, optimizer="sgd", zero_grad="before_forward").bytes
    with pytest.raises(ValueError, match="zero_grad"):
        colo.estimate(model, x, batch_size=16, zero_grad="never")


def test_the_job_estimate_child_passes_on_how_the_script_trains(tmp_path):
    """What a [job.model] table says of autocast, the output kept and the
    gradients reaches colo.estimate in the scheduler's child process."""
    (tmp_path / "lm.py").write_text(
        "import torch.nn as nn\n"
        "def build():\n"
        "    return nn.Sequential(nn.Embedding(4000, 512), nn.Linear(512, 512), nn.Linear(512, 4000))\n")
    model = nn.Sequential(nn.Embedding(4000, 512), nn.Linear(512, 512), nn.Linear(512, 4000))
    ids = torch.randint(0, 4000, (1, 64))

    def child(*flags):
        run = subprocess.run([sys.executable, "-m", "colo.job_estimate", "--builder", "lm:build", "--input", "64",
                              "--vocab", "4000", "--batch", "64", "--optimizer", "adamw", *flags],
                             cwd=tmp_path, capture_output=True, text=True)
        assert run.returncode == 0, run.stdout + run.stderr
        return json.loads(run.stdout.strip().splitlines()[-1])["bytes"]

    flags = ["--autocast", "bf16", "--no-keep-output", "--no-set-to-none", "--accumulation-steps", "2"]
    expected = colo.estimate(model, ids, batch_size=64, optimizer="adamw", autocast="bf16", keep_output=False,
                             set_to_none=False, accumulation_steps=2).bytes
    assert child(*flags) == expected
    plain = colo.estimate(model, ids, batch_size=64, optimizer="adamw").bytes
    assert child() == plain != expected
    after = colo.estimate(model, ids, batch_size=64, optimizer="adamw", zero_grad="after_forward").bytes
    assert child("--zero-grad", "after_forward") == after != plain


def test_an_estimate_for_another_gpu_uses_its_stored_profile(tmp_path, monkeypatch):
    """colo.estimate(..., gpu="h200") reads the profile `colo gpus --profile`
    stored for that GPU: its context and cuDNN workspaces replace the
    reference H100's. With none stored it says which command makes one;
    "h100", the reference, is built in."""
    from colo import _core

    monkeypatch.setenv("COLO_PROFILE_DIR", str(tmp_path))
    model, x = torchvision.models.resnet18(num_classes=10), torch.randn(1, 3, 64, 64)
    with pytest.raises(ValueError, match="colo gpus --profile"):
        colo.estimate(model, x, batch_size=32, optimizer="sgd", gpu="h200")
    with pytest.raises(ValueError, match="short name"):
        colo.estimate(model, x, batch_size=32, optimizer="sgd", gpu="../h200")
    reference = colo.estimate(model, x, batch_size=32, optimizer="sgd", gpu="h100")
    assert reference.gpu == "h100"
    assert colo.estimate(model, x, batch_size=32, optimizer="sgd").bytes == reference.bytes  # no GPU here

    profile = json.loads(_core.reference_device_profile_json())
    profile["name"] = "NVIDIA H200, PyTorch 2.11, CUDA 13"
    profile["context_bytes"] += 512 << 20
    for passes in profile["conv_workspace"]["shapes"].values():  # every convolution takes 3x the workspace
        for points in passes.values():
            for point in points:
                point[1] *= 3
    _core.store_device_profile(json.dumps(profile), "h200")
    h200 = colo.estimate(model, x, batch_size=32, optimizer="sgd", gpu="h200")
    assert h200.gpu == "h200"
    assert h200.breakdown["context"] == reference.breakdown["context"] + (512 << 20)
    assert h200.breakdown["workspace"] > reference.breakdown["workspace"]
    assert h200.bytes > reference.bytes + (512 << 20)


def test_a_profiles_bf16_workspaces_serve_bf16_and_fp16_convolutions(tmp_path, monkeypatch):
    """A profile measured in bf16 too (`conv_workspace_half`) gives half-precision
    convolutions their own workspaces; float32 ones keep float32's."""
    from colo import _core

    monkeypatch.setenv("COLO_PROFILE_DIR", str(tmp_path))
    profile = json.loads(_core.reference_device_profile_json())
    half = json.loads(json.dumps(profile["conv_workspace"]))
    for passes in half["shapes"].values():  # bf16 kernels taking 4x float32's workspace
        for points in passes.values():
            for point in points:
                point[1] *= 4
    _core.store_device_profile(json.dumps(dict(profile, name="halved")), "h200")
    _core.store_device_profile(json.dumps(dict(profile, name="measured", conv_workspace_half=half)), "h100x")
    model, x = torchvision.models.resnet18(num_classes=10), torch.randn(1, 3, 64, 64)
    for autocast in ("bf16", "fp16"):
        scaled = colo.estimate(model, x, batch_size=64, optimizer="sgd", autocast=autocast, gpu="h200")
        measured = colo.estimate(model, x, batch_size=64, optimizer="sgd", autocast=autocast, gpu="h100x")
        assert measured.breakdown["workspace"] > scaled.breakdown["workspace"], autocast
    assert colo.estimate(model, x, batch_size=64, optimizer="sgd", gpu="h100x").bytes == \
        colo.estimate(model, x, batch_size=64, optimizer="sgd", gpu="h200").bytes


class _PermutedNormBlock(torch.nn.Module):
    """A depthwise convolution, then a LayerNorm over channels through NHWC
    and back, as ConvNeXt's blocks do: the next block's input is channels last."""

    def __init__(self, channels):
        super().__init__()
        self.conv = torch.nn.Conv2d(channels, channels, 7, padding=3, groups=channels)
        self.norm = torch.nn.LayerNorm(channels)

    def forward(self, x):
        return self.norm(self.conv(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


def test_a_convolution_run_channels_last_takes_the_channels_last_workspace(tmp_path, monkeypatch):
    """A convolution whose input is laid out channels last (after a permute,
    or a model moved to torch.channels_last) runs other cuDNN kernels on the
    GPU: it takes the workspace measured channels last (keys ending "cl"),
    where the profile has one, and the contiguous shape's where it does not."""
    from colo import _core

    monkeypatch.setenv("COLO_PROFILE_DIR", str(tmp_path))
    channels, side, batch = 32, 28, 16
    key = f"c{channels}o{channels}k7x7s1p3g{channels}h{side}w{side}"
    points = [[16, 0], [64, 0]]
    twin_points = [[16, 64 << 20], [64, 256 << 20]]
    profile = json.loads(_core.reference_device_profile_json())
    shapes = {key: {"forward": points, "input_grad": points, "weight_grad": points}}
    _core.store_device_profile(json.dumps(dict(profile, name="contiguous only",
                                               conv_workspace={"shapes": shapes})), "plain")
    shapes = dict(shapes, **{key + "cl": {"forward": points, "input_grad": points, "weight_grad": twin_points}})
    _core.store_device_profile(json.dumps(dict(profile, name="both layouts", conv_workspace={"shapes": shapes})),
                               "layouts")
    model = torch.nn.Sequential(_PermutedNormBlock(channels), _PermutedNormBlock(channels))
    x = torch.randn(1, channels, side, side)

    def workspace(gpu, m=model, sample=x):
        return colo.estimate(m, sample, batch_size=batch, optimizer="sgd", gpu=gpu).breakdown["workspace"]

    # The second block's convolution runs channels last: its weight gradient takes 64 MiB at batch 16.
    assert workspace("layouts") >= workspace("plain") + (64 << 20)
    contiguous_model = torch.nn.Sequential(torch.nn.Conv2d(channels, channels, 7, padding=3, groups=channels),
                                           torch.nn.Conv2d(channels, channels, 7, padding=3, groups=channels))
    assert workspace("layouts", contiguous_model) == workspace("plain", contiguous_model)
    laid_out = contiguous_model.to(memory_format=torch.channels_last)
    assert workspace("layouts", laid_out, x.to(memory_format=torch.channels_last)) >= \
        workspace("plain", contiguous_model) + (64 << 20)


class _GroupedQueryAttention(torch.nn.Module):
    """Self-attention whose keys and values have `kv_heads` heads, shared by
    groups of the 8 query heads, passed as Hugging Face's Llama does
    (scaled_dot_product_attention(..., enable_gqa=True), causal, no mask)."""

    def __init__(self, kv_heads, dim=64, heads=8):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = torch.nn.Linear(dim, dim)
        self.kv = torch.nn.Linear(dim, 2 * kv_heads * self.head_dim)
        self.register_buffer("rotary", torch.ones(self.head_dim))  # float32: the query leaves autocast's type

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.heads, self.head_dim).transpose(1, 2) * self.rotary
        k, v = self.kv(x).view(b, n, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=self.kv_heads != self.heads)
        return out.transpose(1, 2).reshape(b, n, -1)


def test_the_gpus_math_attention_as_recorded_computes_attention():
    """The op-by-op attention colo records for the GPU's math path gives
    attention's values: key and value heads repeated for their query groups,
    causal or masked (boolean or additive), scaled, in float32 under bf16
    autocast with the autocast type out."""
    from colo.ops_as_on_gpu import math_attention

    q, k, v = torch.randn(2, 8, 16, 8), torch.randn(2, 2, 16, 8), torch.randn(2, 2, 16, 8)
    keys, values = k.repeat_interleave(4, 1), v.repeat_interleave(4, 1)

    def reference(allowed, scale):
        weights = (q @ keys.transpose(-2, -1) * scale).masked_fill(~allowed, float("-inf"))
        return weights.softmax(-1) @ values

    causal = torch.ones(16, 16, dtype=torch.bool).tril()
    assert torch.allclose(math_attention(q, k, v, None, 0.0, True, None), reference(causal, 8 ** -0.5), atol=1e-5)
    mask = torch.rand(16, 16) > 0.3
    mask[:, 0] = True
    assert torch.allclose(math_attention(q, k, v, mask, 0.0, False, 0.5), reference(mask, 0.5), atol=1e-5)
    additive = torch.zeros(16, 16).masked_fill(~mask, float("-inf"))
    assert torch.allclose(math_attention(q, k, v, additive, 0.0, False, 0.5), reference(mask, 0.5), atol=1e-5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert math_attention(q, k, v, None, 0.0, True, None).dtype == torch.bfloat16


@pytest.mark.skipif(tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 5),
                    reason="scaled_dot_product_attention(enable_gqa=) needs torch 2.5")
def test_grouped_query_attention_in_float32_keeps_the_weights_as_the_gpus_math_path_does():
    """In float32 a GPU runs grouped-query attention on the math path, which
    keeps the sequence x sequence weights (flash attention takes no float32,
    memory-efficient attention no head groups); the same attention with as
    many key as query heads runs fused and keeps none. Under bf16 autocast the
    GPU casts the operands to bf16 (a float32 query too) and runs flash
    attention, head groups and all: no weights kept."""
    x = torch.randn(1, 512, 64)
    batch, weights = 8, 8 * 8 * 512 * 512 * 4  # batch x heads x sequence x sequence, float32

    def activations(kv_heads, autocast=None):
        return colo.estimate(_GroupedQueryAttention(kv_heads), x, batch_size=batch, optimizer="sgd",
                             loss=lambda out: out.float().pow(2).mean(), autocast=autocast).breakdown["activations"]

    assert activations(2) >= activations(8) + weights
    assert activations(2, "bf16") < activations(8, "bf16") + weights / 4


def test_a_mask_not_contiguous_in_its_last_dimension_sends_a_gpus_attention_to_the_math_path():
    """Every fused GPU attention kernel needs stride 1 in the last dimension of
    the operands and the mask; T5's position bias, a permuted embedding, has
    stride 8 there, and an H200 ran that self-attention on the math path. The
    same mask made contiguous, or no mask, runs fused; a head size of 1 is
    exempt, as PyTorch's own check has it."""
    from colo.ops_as_on_gpu import gpu_runs_math_attention

    q = k = v = torch.randn(2, 8, 16, 64)
    bias = torch.randn(16, 16, 8).permute(2, 0, 1).unsqueeze(0)  # [1, heads, q, k], stride(-1) == 8
    assert bias.stride(-1) != 1
    assert gpu_runs_math_attention(q, k, v, bias, False)
    assert not gpu_runs_math_attention(q, k, v, bias.contiguous(), False)
    assert not gpu_runs_math_attention(q, k, v, None, False)
    assert gpu_runs_math_attention(q, k.transpose(-1, -2).contiguous().transpose(-1, -2), v, None, False)
    single = torch.randn(2, 8, 1, 16).transpose(-1, -2)  # head size 1: its stride does not matter
    assert not gpu_runs_math_attention(single, single, single, None, False)


@pytest.mark.skipif(F_SDPA is None, reason="scaled_dot_product_attention needs torch 2.x")
def test_attention_with_a_permuted_bias_keeps_the_math_paths_weights():
    """Attention given a position bias laid out as T5 makes it keeps the
    math path's softmax weights (batch x heads x sequence x sequence, float32);
    with the bias made contiguous it keeps none of them."""

    class BiasedAttention(torch.nn.Module):
        def __init__(self, contiguous, dim=64, heads=8, length=256):
            super().__init__()
            self.heads, self.contiguous = heads, contiguous
            self.qkv = torch.nn.Linear(dim, 3 * dim)
            self.bias = torch.nn.Parameter(torch.zeros(length, length, heads))

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = self.qkv(x).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
            bias = self.bias.permute(2, 0, 1).unsqueeze(0)
            bias = bias.contiguous() if self.contiguous else bias
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            return out.transpose(1, 2).reshape(b, n, d)

    x, batch = torch.randn(1, 256, 64), 8
    weights = batch * 8 * 256 * 256 * 4

    def activations(contiguous):
        return colo.estimate(BiasedAttention(contiguous), x, batch_size=batch, optimizer="sgd",
                             loss=lambda out: out.pow(2).mean()).breakdown["activations"]

    assert activations(False) >= activations(True) + weights


def test_a_profile_measures_channels_last_twins_of_the_shapes_asked():
    """`colo gpus --profile --channels-last` measures, beside every contiguous
    shape, the channels-last twins of the depthwise ones (the default), of all,
    or of none; a twin already in the reference table is not measured twice."""
    from colo.device_profile import with_channels_last

    dense, depthwise = "c16o32k3x3s1p1g1h28w28", "c32o32k7x7s1p3g32h28w28"
    shapes = [dense, depthwise, depthwise + "cl"]
    assert with_channels_last(shapes, "depthwise") == sorted([dense, depthwise, depthwise + "cl"])
    assert with_channels_last(shapes, "all") == sorted([dense, dense + "cl", depthwise, depthwise + "cl"])
    assert with_channels_last(shapes, "none") == sorted([dense, depthwise])


def test_a_kernels_workspace_is_what_its_freed_allocations_asked_for_at_once():
    """A profile's workspace is read from the allocator's trace of one kernel:
    the requested bytes of allocations freed within it, at their most at once;
    the result, still live at the end, is not workspace, and an address used
    twice is two allocations."""
    from colo.device_profile import peak_of_temporaries

    mib = 1 << 20
    events = [("alloc", 1, 49_560_000), ("alloc", 2, 10 * mib), ("free_completed", 1, 49_560_000),
              ("alloc", 1, 3 * mib), ("alloc", 3, 20 * mib), ("free_completed", 3, 20 * mib),
              ("free_completed", 1, 3 * mib)]
    assert peak_of_temporaries(events) == 49_560_000  # 10 MiB at address 2 is the result
    assert peak_of_temporaries(events[:4] + [("alloc", 3, 47 * mib), ("free_completed", 3, 47 * mib),
                                             ("free_completed", 1, 3 * mib)]) == 50 * mib
    assert peak_of_temporaries([("alloc", 2, mib)]) == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="measures cuDNN's workspaces on a CUDA GPU")
def test_on_a_gpu_a_workspace_by_trace_is_the_allocators_peak_less_its_block_rounding():
    """On a GPU (run by hand there: CI has none), a workspace read from the
    allocator's trace is what the allocator's peak shows, less at most the
    whole cached blocks its requests took (under 1 MiB each)."""
    from colo.device_profile import conv_workspace_bytes

    device = torch.device("cuda", 0)
    for key in ("c64o64k3x3s1p1g1h56w56", "c3o64k7x7s2p3g1h224w224", "c96o96k7x7s1p3g96h56w56cl"):
        for dtype in (torch.float32, torch.bfloat16):
            traced = conv_workspace_bytes(device, key, 64, dtype)
            peak = conv_workspace_bytes(device, key, 64, dtype, by_trace=False)
            for name in peak:
                assert peak[name] - (2 << 20) <= traced[name] <= peak[name] + 512, (key, dtype, name, traced, peak)


def test_measuring_a_profile_without_a_cuda_gpu_is_refused_in_one_line():
    """python -m colo.device_profile (what `colo gpus --profile` runs) on a
    machine whose torch sees no CUDA GPU exits 2, saying so, and stores nothing."""
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    run = subprocess.run([sys.executable, "-m", "colo.device_profile"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "no CUDA GPU here" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_profile_measures_every_reference_batch_up_to_its_max_batch():
    """`colo gpus --profile --max-batch N` measures each convolution at every
    batch of the built-in table up to N (a --quick profile's 32/128/512 left
    batch 64 to interpolation, which cuDNN's workspaces do not follow)."""
    from colo import _core, device_profile

    shapes = json.loads(_core.reference_device_profile_json())["conv_workspace"]["shapes"]
    every = device_profile.profile_batches(shapes)
    assert 64 in every and 1024 in every
    assert device_profile.profile_batches(shapes, quick=True) == [32, 128, 512]
    upto = device_profile.profile_batches(shapes, max_batch=256)
    assert upto == [b for b in every if b <= 256] and 64 in upto and 512 not in upto
    assert device_profile.profile_batches(shapes, max_batch=1) == every[:1]


def test_under_autocast_layer_norm_runs_in_float32_as_on_a_gpu():
    """CUDA autocast runs layer_norm (and group_norm) in float32 and gives
    softmax a float32 result; CPU autocast, which colo records under, keeps
    them in bf16, so a transformer's normalised activations came out half
    their GPU size (and torch 1.13's CPU LayerNorm failed on its float32
    weight: Swin-T, ConvNeXt-T and the LayerNorm MLP could not be estimated
    under autocast). Six Linear + LayerNorm blocks at batch 4096 keep, per
    block, LayerNorm's float32 input (16 MiB) and the next Linear's bf16
    copy of its output (8 MiB)."""
    blocks = 6
    model = nn.Sequential(*[m for _ in range(blocks) for m in (nn.Linear(1024, 1024), nn.LayerNorm(1024))],
                          nn.Linear(1024, 10))
    e = colo.estimate(model, torch.randn(1, 1024), batch_size=4096, optimizer="sgd", autocast="bf16")
    elements = 4096 * 1024
    assert e.breakdown["activations"] >= blocks * elements * (4 + 2), e  # 2 + 2 with CPU autocast's policy
    probabilities = []

    class Attention(nn.Module):
        def forward(self, x):
            p = torch.softmax(x @ x.transpose(-1, -2), dim=-1)
            probabilities.append(p.dtype)
            return p @ x

    colo.estimate(nn.Sequential(nn.Linear(64, 64), Attention(), nn.Linear(64, 10)), torch.randn(1, 16, 64),
                  batch_size=8, autocast="bf16")
    assert probabilities and set(probabilities) == {torch.float32}, probabilities
    with torch.autocast("cpu", dtype=torch.bfloat16):  # torch's own autocast is left as it was
        assert torch.softmax(torch.randn(4, 4).bfloat16(), dim=-1).dtype == torch.bfloat16


def test_cublas_workspaces_taken_after_the_first_forward_split_its_blocks_for_the_second():
    """A fresh process takes cuBLAS's two workspaces at the head's matrix
    products, after a frozen backbone's forward freed its blocks, and keeps
    them: they split the blocks the second forward's large tensors need (an
    H100 trace: a frozen ResNet-18 at batch 128 reserved 1466 MiB fresh,
    1258 MiB warm). By hand: 392 and 466 MiB are freed, the two 32 MiB
    workspaces split the 392 MiB block, the second forward's 392 MiB tensor
    takes the 466 MiB block and its 466 MiB tensor a new segment: 1324 MiB
    reserved, 1260 beside the workspaces (counted with the library's)."""
    from colo import _core
    from colo.estimate import _second_step_peaks
    mib = 1 << 20
    forward = [(0, 392 * mib), (1, 466 * mib), (0, 0), (1, 0), (2, 32 * mib)]
    assert _core.allocator_peaks(forward) == (858 * mib, 858 * mib)  # one forward: no new segment
    assert _second_step_peaks(forward, 2, 32 * mib, _core) == (858 * mib, 1260 * mib)


def test_foreach_adam_holds_every_parameters_temporary_at_once():
    """torch.optim's foreach step (torch 2's default on CUDA) takes the
    denominators of all parameters before freeing any; the single-tensor
    loop takes two temporaries of one parameter at a time. Four 16 MiB
    weights under Adam: the foreach step's peak is 64 MiB of temporaries
    against 32, and the optimiser step is the peak at a batch of two."""
    from colo.estimate import _default_optimizer_implementation, _optimizer_fields
    model = nn.Sequential(*[nn.Linear(2048, 2048) for _ in range(4)])
    x = torch.randn(1, 2048)
    single = colo.estimate(model, x, batch_size=2, optimizer=torch.optim.Adam(model.parameters(), foreach=False))
    foreach = colo.estimate(model, x, batch_size=2, optimizer=torch.optim.Adam(model.parameters(), foreach=True))
    assert foreach.peak_phase == "optimizer"
    assert foreach.bytes - single.bytes >= 30 << 20, (foreach, single)
    assert _optimizer_fields(torch.optim.Adam(model.parameters()))[4] == _default_optimizer_implementation()
    assert _optimizer_fields("sgd")[4] == _default_optimizer_implementation()


class _ResidentNet(nn.Module):
    """Own parameter and buffers beside children, a module reached twice, an empty buffer."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1000))
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 10)
        self.again = self.head
        self.register_buffer("mask", torch.ones(300))
        self.register_buffer("empty", torch.empty(0))


def test_resident_allocations_are_what_module_to_allocates_in_its_order():
    from colo.estimate import _allocator_bytes, _resident_allocations
    net = _ResidentNet()
    applied, seen = [], set()

    def record(t):  # what .to("cuda") would copy, in the order nn.Module._apply visits it
        if id(t) not in seen and t.numel() > 0:
            applied.append(_allocator_bytes(t.numel() * t.element_size()))
        seen.add(id(t))
        return t

    net._apply(record)
    assert _resident_allocations(net) == applied
    # The children's tensors before the module's own parameter, its buffer last.
    assert applied[-2:] == [4096, 1536] and len(applied) == 11


def test_a_frozen_weight_is_a_block_of_its_own_in_the_replay(monkeypatch):
    # A 3 MiB frozen weight: on a GPU the caching allocator gives it a 20 MiB
    # segment of its own (1-10 MiB requests), whose other 17 MiB the step's
    # small tensors never use. Counted as bytes beside the replay, as before,
    # it costs its 3 MiB only.
    model = nn.Sequential(nn.Linear(1024, 768), nn.ReLU(), nn.Linear(768, 10))
    for p in model[0].parameters():
        p.requires_grad_(False)
    as_blocks = colo.estimate(model, torch.randn(2, 1024), batch_size=8, optimizer="sgd")
    module = sys.modules["colo.estimate"]
    resident = module._resident_model_bytes(model)
    monkeypatch.setattr(module, "_resident_allocations", lambda model: [])  # the replay: trainable blocks only
    monkeypatch.setattr(module, "_resident_model_bytes", lambda model: resident)  # the rest added as bytes
    as_bytes = colo.estimate(model, torch.randn(2, 1024), batch_size=8, optimizer="sgd")
    assert as_blocks.breakdown["parameters"] == as_bytes.breakdown["parameters"] >= 3 << 20
    assert as_blocks.bytes - as_bytes.bytes >= 16 << 20
