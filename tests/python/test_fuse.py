"""colo.fuse on the CPU: N fused models trained for several steps equal N
models trained separately with torch.optim (a user-written CNN, torchvision
ResNet-18, a small transformer classifier), forward passes of other layer
mixes agree, unfused state_dicts load into the original class, and what
cannot be fused is named."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

import colo.fuse as cf


class UserCNN(nn.Module):
    """A user-written CNN: convolutions with BatchNorm, pooling, a view and
    an MLP head, written the way tutorials write it."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 6 * 6, 64)
        self.fc2 = nn.Linear(64, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        return self.fc2(F.gelu(self.fc1(x)))


class TransformerClassifier(nn.Module):
    """Token embedding + learned positions, a two-layer nn.TransformerEncoder
    and a linear head over the mean token."""

    def __init__(self, vocab=50, length=12, dim=32, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.position = nn.Parameter(torch.randn(1, length, dim) * 0.1)
        layer = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens) + self.position).mean(dim=1))


_OPTIMISERS = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}


def train_both(build, n, batches, name, channels_last=False, **hyper):
    """Trains n models fused and the same n models alone, in float64 (so that
    rounding does not grow into different ReLU decisions); returns both."""
    torch.manual_seed(0)
    alone = [build().double() for _ in range(n)]
    return train_fused_and_alone(alone, batches, name, channels_last=channels_last, **hyper)


def train_fused_and_alone(models, batches, name, channels_last=False, **hyper):
    """Trains copies of `models` fused and each alone with torch.optim (its
    trainable parameters), floating inputs in float64; asserts equal losses
    at every step and returns (fused, alone)."""
    alone = [copy.deepcopy(m) for m in models]
    fused = cf.fuse([copy.deepcopy(m) for m in models], channels_last=channels_last)
    trainer = cf.Trainer(fused, cf.optimizer(fused, name, **hyper))
    per_model = [{k: (v[i] if isinstance(v, list) else v) for k, v in hyper.items()} for i in range(len(models))]
    optimisers = [_OPTIMISERS[name]([p for p in m.parameters() if p.requires_grad], **h)
                  for m, h in zip(alone, per_model)]
    for inputs, targets in batches:
        inputs = inputs.double() if inputs.is_floating_point() else inputs
        fused_losses = trainer.step(inputs, targets)
        alone_losses = []
        for model, opt in zip(alone, optimisers):
            opt.zero_grad()
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            opt.step()
            alone_losses.append(loss.item())
        assert fused_losses.tolist() == pytest.approx(alone_losses, rel=1e-9)
    return fused, alone


def largest_difference(fused, alone, part=lambda name, tensor: tensor):
    """The largest relative difference (norm of the difference over the norm of
    the separately trained tensor) over every parameter and buffer, each
    compared on part(name, tensor)."""
    states = cf.unfuse(fused)
    worst = 0.0
    for model, state in zip(alone, states):
        for name, value in state.items():
            expected = part(name, model.state_dict()[name].double())
            worst = max(worst, ((part(name, value.double()) - expected).norm() / (expected.norm() + 1e-12)).item())
    return worst


def without_key_bias(name, tensor):
    """Attention's key bias cannot change its output (softmax ignores a shift
    shared by all keys), so its true gradient is zero and Adam turns rounding
    noise there into full steps: compare query and value biases only."""
    if name.endswith("in_proj_bias"):
        third = tensor.shape[-1] // 3
        return torch.cat([tensor[..., :third], tensor[..., 2 * third:]], dim=-1)
    return tensor


def image_batches(count, batch, channels, size, classes=10):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(batch, channels, size, size, generator=generator),
             torch.randint(0, classes, (batch,), generator=generator)) for _ in range(count)]


@pytest.mark.parametrize("channels_last", [False, True])
def test_user_cnn_fused_trains_like_separate_models(channels_last):
    fused, alone = train_both(UserCNN, 3, image_batches(4, 16, 1, 28), "sgd", channels_last=channels_last,
                              lr=[0.1, 0.05, 0.01], momentum=[0.9, 0.5, 0.0], weight_decay=[0.0, 1e-4, 5e-4])
    assert largest_difference(fused, alone) < 1e-9
    assert fused.models == 3
    if channels_last:  # weights stored NHWC, so a step copies none
        conv = next(m for m in fused.modules() if type(m).__name__ == "FusedConv")
        assert conv.weight.flatten(0, 1).is_contiguous(memory_format=torch.channels_last)


def test_resnet18_fused_trains_like_separate_models():
    build = (lambda: torchvision.models.resnet18(num_classes=10))
    fused, alone = train_both(build, 2, image_batches(3, 16, 3, 32), "sgd", lr=[0.05, 0.01], momentum=0.9)
    assert largest_difference(fused, alone) < 1e-9


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_transformer_classifier_fused_trains_like_separate_models(name):
    generator = torch.Generator().manual_seed(2)
    batches = [(torch.randint(0, 50, (8, 12), generator=generator), torch.randint(0, 5, (8,), generator=generator))
               for _ in range(3)]
    fused, alone = train_both(TransformerClassifier, 3, batches, name, lr=[1e-3, 2e-3, 5e-4],
                              weight_decay=[0.0, 0.01, 0.1])
    assert largest_difference(fused, alone, without_key_bias) < 1e-9


def test_unfused_state_loads_into_the_original_class():
    torch.manual_seed(3)
    fused = cf.fuse(UserCNN, 4)
    fused.eval()
    x = torch.randn(5, 1, 28, 28)
    outputs = fused(x)
    for i, state in enumerate(cf.unfuse(fused)):
        model = UserCNN()
        model.load_state_dict(state)
        model.eval()
        assert torch.allclose(model(x), outputs[i], atol=1e-5)


def forward_matches(build, n, *inputs, train=False):
    torch.manual_seed(4)
    models = [build() for _ in range(n)]
    for model in models:
        model.train(train)
    fused = cf.fuse([copy.deepcopy(m) for m in models])
    expected = torch.stack([m(*inputs) for m in models])
    actual = fused(*inputs)
    assert actual.shape == expected.shape
    assert expected.abs().max() > 0
    return (actual - expected).abs().max().item()


def test_torchvision_vit_forward_matches():
    def build():
        vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                                                   hidden_dim=32, mlp_dim=64, num_classes=10)
        nn.init.normal_(vit.heads.head.weight)  # torchvision starts the head at zero
        return vit
    assert forward_matches(build, 3, torch.randn(5, 3, 32, 32)) < 1e-4


class LayerMix(nn.Module):
    """Conv1d, BatchNorm1d, GroupNorm, ConvTranspose2d, LayerNorm over three
    axes, Embedding with padding, sequence-first attention with a mask and
    its weights, a reduction returning (values, indices), a concatenation."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.bn = nn.BatchNorm1d(8)
        self.gn = nn.GroupNorm(2, 8)
        self.up = nn.ConvTranspose2d(2, 3, 2, stride=2)
        self.ln = nn.LayerNorm([3, 8, 8])
        self.embed = nn.Embedding(20, 8, padding_idx=0)
        self.attention = nn.MultiheadAttention(8, 2)
        self.fc = nn.Linear(8, 3)
        self.out_bn = nn.BatchNorm1d(3)
        self.register_buffer("mask", torch.triu(torch.ones(5, 5, dtype=torch.bool), 1))

    def forward(self, x, tokens):
        h = F.gelu(self.gn(self.bn(self.conv(x))))
        image = h.reshape(h.shape[0], 2, 4, -1)[:, :, :, :4]
        up = self.ln(self.up(image))
        e = self.embed(tokens).transpose(0, 1)
        a, weights = self.attention(e, e, e, attn_mask=self.mask)
        z = self.fc(a.mean(0)) + up.flatten(1).sum(-1, keepdim=True) + h.max(dim=2).values.mean(1, keepdim=True)
        return torch.cat([self.out_bn(z), weights.sum((1, 2)).unsqueeze(1)], dim=1)


def test_layer_mix_forward_matches_in_training_mode():
    tokens = torch.randint(0, 20, (6, 5))
    tokens[0, 0] = 0
    assert forward_matches(LayerMix, 3, torch.randn(6, 4, 8), tokens, train=True) < 1e-4


def test_dropout_rate_per_model():
    class Dropped(nn.Module):
        def __init__(self, rate):
            super().__init__()
            self.fc = nn.Linear(64, 64)
            self.drop = nn.Dropout(rate)

        def forward(self, x):
            return self.drop(self.fc(x))
    fused = cf.fuse(lambda i: Dropped([0.0, 0.5][i]), 2)
    x = torch.randn(32, 64)
    out = fused(x)
    fused.eval()
    clean = fused(x)
    assert torch.equal(out[0], clean[0])
    zeroed = (out[1] == 0).double().mean().item()
    assert 0.4 < zeroed < 0.6


def test_what_cannot_be_fused_is_named():
    class Recurrent(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(4, 4)

        def forward(self, x):
            return self.rnn(x)[0]
    with pytest.raises(cf.FuseError, match=r"'rnn' \(LSTM\)"):
        cf.fuse(Recurrent, 2)

    class Spectral(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return torch.fft.fft(self.fc(x)).real
    with pytest.raises(cf.FuseError, match="fft"):
        cf.fuse(Spectral, 2)
    with pytest.raises(cf.FuseError, match="architecture"):
        cf.fuse(lambda i: nn.Linear(3, 2 + i), 2)


def test_optimizer_checks_its_hyper_parameters():
    fused = cf.fuse(UserCNN, 2)
    with pytest.raises(cf.FuseError, match="3 values for 2 models"):
        cf.optimizer(fused, "sgd", lr=[0.1, 0.2, 0.3])
    with pytest.raises(cf.FuseError, match="unknown optimiser"):
        cf.optimizer(fused, "lamb", lr=0.1)


class TextCNN(nn.Module):
    """Embedding, transposed to channels, then Conv1d (a text CNN), and a
    Linear viewed as an image for a Conv2d (a generator's first layers): the
    convolutions' inputs are per-model tensors that are not stacked channels."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 8)
        self.conv = nn.Conv1d(8, 6, 3, padding=1)
        self.fc = nn.Linear(6, 2 * 4 * 4)
        self.deconv = nn.Conv2d(2, 5, 3, padding=1)

    def forward(self, tokens):
        h = F.relu(self.conv(self.embed(tokens).transpose(1, 2))).amax(-1)
        return self.deconv(self.fc(h).view(h.size(0), 2, 4, 4)).mean((2, 3))


def test_convolution_of_a_reshaped_per_model_tensor_trains_like_separate_models():
    generator = torch.Generator().manual_seed(5)
    batches = [(torch.randint(0, 30, (6, 9), generator=generator), torch.randint(0, 5, (6,), generator=generator))
               for _ in range(3)]
    fused, alone = train_both(TextCNN, 3, batches, "adam", lr=[1e-2, 3e-3, 1e-3])
    assert largest_difference(fused, alone) < 1e-9


class PositionalClassifier(nn.Module):
    """Positions and a padding mask made from the input's size with
    torch.arange and torch.zeros, as transformer tutorials write them."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 16, padding_idx=0)
        self.position = nn.Embedding(13, 16)
        self.cls = nn.Parameter(torch.randn(1, 1, 16) * 0.1)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1)
        self.head = nn.Linear(16, 4)

    def forward(self, tokens):
        batch, length = tokens.shape
        x = torch.cat([self.cls.expand(batch, -1, -1), self.embed(tokens)], dim=1)
        x = x + self.position(torch.arange(length + 1, device=tokens.device)).unsqueeze(0)
        padding = torch.cat([torch.zeros(batch, 1, dtype=torch.bool, device=tokens.device), tokens == 0], dim=1)
        return self.head(self.encoder(x, src_key_padding_mask=padding)[:, 0])


def test_sizes_given_to_tensor_factories_trace_and_train_like_separate_models():
    generator = torch.Generator().manual_seed(6)
    batches = []
    for _ in range(3):
        tokens = torch.randint(1, 30, (6, 12), generator=generator)
        tokens[:3, -4:] = 0
        batches.append((tokens, torch.randint(0, 4, (6,), generator=generator)))
    fused, alone = train_both(PositionalClassifier, 3, batches, "sgd", lr=[0.1, 0.05, 0.02], momentum=0.9)
    assert largest_difference(fused, alone) < 1e-9
    assert torch.arange is torch._C._VariableFunctions.arange  # the tracer put the factories back


def test_control_flow_on_a_traced_value_is_a_fuse_error_naming_the_line():
    class Branching(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = self.fc(x)
            if h.sum() > 0:
                return h
            return -h
    with pytest.raises(cf.FuseError, match=r"Branching.forward at .*test_fuse.py.*if h.sum\(\) > 0"):
        cf.fuse(Branching, 2)


class ConstantsInForward(nn.Module):
    """A channel scale made with torch.tensor in the forward, a constant
    buffer of shape [1, 1, 1], and the input's first channel ([B, 1, H, W])
    added to every channel: plain tensors broadcast against per-model ones."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.register_buffer("gain", torch.full((1, 1, 1), 0.5))
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        h = self.conv(x) * torch.tensor([0.5, 1.0, 1.5, 2.0]).view(4, 1, 1) * self.gain
        h = torch.relu(h + x[:, :1])
        return self.fc(h.mean((2, 3)))


def test_tensors_made_in_the_forward_and_size_one_channels_train_like_separate_models():
    fused, alone = train_both(ConstantsInForward, 3, image_batches(3, 8, 3, 6), "sgd", lr=[0.1, 0.05, 0.02])
    assert largest_difference(fused, alone) < 1e-9
    model = ConstantsInForward()
    model.load_state_dict(cf.unfuse(fused, 1))  # the constant is not part of the state
    assert not any(name.startswith("_tensor_constant") for name in vars(alone[0]))


class ChannelPadding(nn.Module):
    """F.pad that adds channels (on both sides) and a reflection pad of the
    spatial dims of a tensor reshaped from a Linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(6, 2, 3, padding=1)
        self.fc = nn.Linear(3, 2 * 4 * 4)
        self.head = nn.Linear(2 * 6 * 6, 10)

    def forward(self, x):
        h = self.conv2(F.pad(self.conv(x), (0, 0, 0, 0, 1, 1)))
        h = h + F.pad(self.fc(x.mean((2, 3))).view(-1, 2, 4, 4), (1, 1, 1, 1), mode="reflect")
        return self.head(h.flatten(1))


def test_padding_channels_and_reflection_padding_train_like_separate_models():
    fused, alone = train_both(ChannelPadding, 2, image_batches(3, 8, 3, 6), "sgd", lr=[0.1, 0.05], momentum=0.9)
    assert largest_difference(fused, alone) < 1e-9


def test_values_of_the_forward_that_differ_per_model_are_honoured_or_named():
    class Functional(nn.Module):
        def __init__(self, rate, scale=1.0):
            super().__init__()
            self.fc = nn.Linear(64, 64)
            self.rate, self.scale = rate, scale

        def forward(self, x):
            return F.dropout(self.fc(x), self.rate, self.training) * self.scale
    fused = cf.fuse(lambda i: Functional([0.0, 0.5][i]), 2)  # each model its own rate, as nn.Dropout
    out = fused(torch.randn(32, 64))
    assert (out[0] == 0).double().mean().item() < 0.01
    assert 0.4 < (out[1] == 0).double().mean().item() < 0.6
    with pytest.raises(cf.FuseError, match=r"differs between models 0 and 1.*3\.0.*1\.0.*line"):
        cf.fuse(lambda i: Functional(0.0, [1.0, 3.0][i]), 2)  # was model 0's scale for both, silently


class TinyLM(nn.Module):
    """Embedding, one hidden layer and a vocabulary-wide head: logits [B, T, V]."""

    def __init__(self, vocab=512, width=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, width)
        self.body = nn.Linear(width, width)
        self.head = nn.Linear(width, vocab)

    def forward(self, x):
        return self.head(torch.tanh(self.body(self.emb(x))))


def _next_token_loss(logits, targets):
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def test_a_bf16_step_makes_no_float32_copy_of_all_models_outputs_and_each_loss_is_its_models_own():
    """Under bf16 the losses are taken in float32 model by model: one
    float32 copy of all N models' logits (a fused language model's largest
    tensor, 8 x 2048 x 50257 x 4 bytes = 3.3 GB for GPT-2) would otherwise
    be made and held through the backward. Each model's loss is still its
    own logits' loss in float32."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    n, batch, length, vocab = 3, 2, 7, 512  # no weight has as many elements as all logits
    all_logits = n * batch * length * vocab

    class FullFloat32Outputs(TorchDispatchMode):
        made = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.numel() == all_logits:
                    self.made.append(str(func))
            return out

    torch.manual_seed(0)
    fused = cf.fuse(TinyLM, n)
    trainer = cf.Trainer(fused, cf.optimizer(fused, "sgd", lr=0.1), _next_token_loss, bf16=True)
    x = torch.randint(0, vocab, (batch, length))
    y = torch.randint(0, vocab, (batch, length))
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
        logits = fused(x)
    expected = [_next_token_loss(logits[i].float(), y) for i in range(n)]
    with FullFloat32Outputs() as mode:
        losses = trainer.step(x, y)
    assert mode.made == [], f"float32 tensors the size of all models' logits: {mode.made}"
    assert torch.allclose(losses, torch.stack(expected), rtol=0, atol=1e-6)
