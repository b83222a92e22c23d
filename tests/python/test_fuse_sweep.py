"""colo.fuse.sweep on the CPU: configurations come from colo's C++ sweep plan,
architectures that differ train as separate arrays, successive halving stops
the worse models, and a model that survives halving ends exactly as the same
configuration trained alone with torch.optim (float64)."""
import json
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import colo
import colo.fuse as cf


def test_grid_and_random_configurations():
    grid = cf.configurations({"lr": [0.1, 0.01], "width": [8, 16, 32]})
    assert grid[0] == {"lr": 0.1, "width": 8} and grid[3] == {"lr": 0.01, "width": 8} and len(grid) == 6
    axes = {"lr": {"min": 1e-4, "max": 1e-1, "log": True}, "width": [8, 16]}
    draws = cf.configurations(axes, "random", count=20, seed=3)
    assert len(draws) == 20 and all(1e-4 <= d["lr"] <= 1e-1 for d in draws)
    assert draws == cf.configurations(axes, "random", count=20, seed=3)
    with pytest.raises(cf.FuseError, match="range"):
        cf.configurations(axes)


class Mlp(nn.Module):
    def __init__(self, width=16):
        super().__init__()
        self.hidden = nn.Linear(10, width)
        self.out = nn.Linear(width, 3)

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))


def data(seed, batches, batch=32):
    """Three Gaussian classes (centres fixed, samples drawn with `seed`)."""
    centres = torch.randn(3, 10, generator=torch.Generator().manual_seed(99), dtype=torch.float64) * 2
    generator = torch.Generator().manual_seed(seed)
    result = []
    for _ in range(batches):
        labels = torch.randint(0, 3, (batch,), generator=generator)
        result.append((centres[labels] + torch.randn(batch, 10, generator=generator, dtype=torch.float64), labels))
    return result


def train_alone(model, opt, batches, epochs):
    """The configuration trained alone with torch.optim, as the sweep would."""
    for _ in range(epochs):
        for x, y in batches:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()


def assert_saved_state_equals(out, record, model):
    """The state the sweep saved for `record`'s model equals `model`'s; returns it."""
    state = torch.load(os.path.join(out, f"model-{record['model']}", "state.pt"))
    for name, value in model.state_dict().items():
        assert torch.allclose(state[name], value, rtol=1e-9, atol=1e-12), name
    return state


def test_sweep_halves_and_survivors_train_as_if_alone(tmp_path):
    train, test = data(0, 6), data(1, 2)
    axes = {"width": [8, 16], "lr": [0.3, 0.1, 0.03]}
    ranked = colo.sweep(lambda width: Mlp(width).double(), axes, train, test, epochs=3,
                        optimizer={"momentum": 0.9}, halving={"rungs": [1], "keep": 0.5}, out=str(tmp_path),
                        on_epoch=None, device="cpu")
    assert len(ranked) == 6
    assert [r["test_accuracy"] for r in ranked] == sorted((r["test_accuracy"] for r in ranked), reverse=True)
    assert {r["array"] for r in ranked} == {0, 1}  # two widths cannot fuse
    stopped = [r for r in ranked if r["stopped"]]
    assert len(stopped) == 2 and all(r["epochs"] == 1 for r in stopped)  # ceil(0.5 * 3) = 2 of 3 go on
    assert all(r["epochs"] == 3 for r in ranked if not r["stopped"])
    assert ranked[0]["test_accuracy"] > 0.8
    with open(tmp_path / "sweep.jsonl") as f:
        assert len(f.readlines()) == 6 + 4 + 4
    assert json.load(open(tmp_path / "results.json"))["array_sizes"] == [3, 3]

    survivor = next(r for r in ranked if not r["stopped"])
    torch.manual_seed(survivor["model"])  # a model's seed defaults to its index
    alone = Mlp(survivor["values"]["width"]).double()
    train_alone(alone, torch.optim.SGD(alone.parameters(), lr=survivor["values"]["lr"], momentum=0.9), train, 3)
    assert_saved_state_equals(tmp_path, survivor, alone)
    with torch.no_grad():
        correct = sum((alone(x).argmax(1) == y).sum().item() for x, y in test)
    assert survivor["test_accuracy"] == pytest.approx(correct / 64)


def test_array_that_runs_out_of_memory_is_split_and_restarted(tmp_path, monkeypatch, capsys):
    """An array of more than two models "runs out of memory" on its first
    step; the sweep splits it until the pieces fit, and every model's result
    equals a sweep whose arrays were that small to begin with."""
    train, test = data(0, 3), data(1, 1)
    axes = {"lr": [0.3, 0.1, 0.03, 0.01, 0.003]}
    step = cf.Trainer.step

    def step_with_a_memory_limit(self, inputs, targets):
        if self.fused.models > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (test)")
        return step(self, inputs, targets)

    monkeypatch.setattr(cf.Trainer, "step", step_with_a_memory_limit)
    run = lambda out, max_array: colo.sweep(lambda: Mlp().double(), axes, train, test, epochs=2, on_epoch=None,
                                            device="cpu", out=str(out), max_array=max_array)
    split = run(tmp_path / "split", 0)
    assert "splitting it into 3 + 2" in capsys.readouterr().err
    assert json.load(open(tmp_path / "split" / "results.json"))["array_sizes"] == [2, 1, 2]
    events = [json.loads(line) for line in open(tmp_path / "split" / "sweep.jsonl")]
    assert [e["sizes"] for e in events if e.get("event") == "split"] == [[3, 2], [2, 1]]
    small = run(tmp_path / "small", 2)
    assert {r["model"]: r["test_accuracy"] for r in split} == {r["model"]: r["test_accuracy"] for r in small}
    assert {r["model"]: r["loss"] for r in split} == pytest.approx({r["model"]: r["loss"] for r in small}, rel=1e-12)


def test_halving_is_checked():
    train, test = data(0, 1), data(1, 1)
    for halving, message in [({"rungs": [1], "kepp": 0.5}, "unknown key"), ({"keep": 0.5}, "rungs"),
                             ({"rungs": [0]}, "rungs"), ({"rungs": [1], "keep": 1.5}, "keep")]:
        with pytest.raises(cf.FuseError, match=message):
            colo.sweep(lambda: Mlp().double(), {"lr": [0.1, 0.2]}, train, test, epochs=2, halving=halving,
                       on_epoch=None, device="cpu")
    with pytest.raises(cf.FuseError, match="before the last epoch"):
        colo.sweep(lambda: Mlp().double(), {"lr": [0.1, 0.2]}, train, test, epochs=2, halving={"rungs": [2]},
                   on_epoch=None, device="cpu")


def test_what_colo_sweep_refuses_in_a_file_is_refused_here_instead_of_training():
    """No silent zeros from epochs=0, no gradient ascent from a negative lr."""
    train, test = data(0, 1), data(1, 1)
    cases = [(dict(epochs=0), "epochs must be a whole number"), (dict(epochs=-1), "epochs"),
             (dict(epochs=1.5), "epochs"), (dict(epochs=1, max_steps=0), "max_steps"),
             (dict(epochs=1, axes={"lr": [0.1, -0.1]}), r"configuration 1 .*learning rate > 0"),
             (dict(epochs=1, axes={"lr": [0.1], "momentum": [1.0]}), "momentum in"),
             (dict(epochs=1, axes={"lr": [0.1], "weight_decay": [-1e-4]}), "weight decay"),
             (dict(epochs=1, axes={"lr": [0.1], "optimizer": ["lion"]}), "sgd, adam or adamw")]
    for options, message in cases:
        axes = options.pop("axes", {"lr": [0.1]})
        with pytest.raises(cf.FuseError, match=message):
            colo.sweep(lambda: Mlp().double(), axes, train, test, on_epoch=None, device="cpu", **options)


class LoRAMlp(nn.Module):
    """A 'pretrained' frozen MLP (the same weights for every configuration)
    with a LoRA adapter of the given rank on its hidden layer, the only part
    that trains. A noisy adapter saturates tanh and cannot recover."""

    def __init__(self, rank, noisy):
        super().__init__()
        from colo.fuse.adapters import LoRALinear
        torch.manual_seed(1234)  # the pretrained part: one checkpoint
        base = nn.Linear(10, 16).double().requires_grad_(False)
        self.out = nn.Linear(16, 3).double().requires_grad_(False)
        torch.manual_seed(rank)
        a, b = nn.Linear(10, rank, bias=False).double(), nn.Linear(rank, 16, bias=False).double()
        nn.init.normal_(b.weight, std=100.0 if noisy else 0.01)
        self.hidden = LoRALinear(base, a, b, nn.Identity(), 2.0 / rank, "default")

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))


def test_a_fine_tuning_sweep_fuses_adapter_ranks_and_halving_cuts_the_padding(tmp_path):
    train, test = data(0, 6), data(1, 2)
    build = (lambda rank: LoRAMlp(rank, noisy=rank == 8))  # rank 8 starts far off: halving stops it
    ranked = colo.sweep(build, {"rank": [2, 8], "lr": [0.1, 0.05]}, train, test, epochs=3,
                        optimizer={"optimizer": "adam"}, halving={"rungs": [1], "keep": 0.5}, out=str(tmp_path),
                        on_epoch=None, device="cpu")
    assert json.load(open(tmp_path / "results.json"))["array_sizes"] == [4]  # ranks 2 and 8 in one array
    stopped = [r for r in ranked if r["stopped"]]
    assert sorted(r["values"]["rank"] for r in stopped) == [8, 8]  # the array's largest rank goes after epoch 1
    survivor = next(r for r in ranked if not r["stopped"])
    alone = build(survivor["values"]["rank"])
    trainable = [p for p in alone.parameters() if p.requires_grad]
    train_alone(alone, torch.optim.Adam(trainable, lr=survivor["values"]["lr"]), train, 3)
    state = assert_saved_state_equals(tmp_path, survivor, alone)
    assert state["hidden.lora_A.default.weight"].shape == (2, 10)  # back at its own rank


def test_the_fine_tuning_sweep_example_fuses_each_head_kind_into_one_array(tmp_path):
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "finetune_sweep.py")
    done = subprocess.run([sys.executable, example, "--epochs", "2", "--subset", "600", "--pretrain-steps", "20",
                           "--checkpoint", str(tmp_path / "pretrained.pt"), "--out", str(tmp_path / "sweep")],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, OMP_NUM_THREADS="2"))
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.load(open(tmp_path / "sweep" / "results.json"))
    assert results["array_sizes"] == [9, 9]  # 3 ranks x 3 learning rates per head kind, one array each
    models = results["models"]
    assert sum(m["stopped"] for m in models) == 8  # halving after epoch 1 keeps 5 of each 9
    assert models[0]["test_accuracy"] > 0.5  # five classes: chance is 0.2
    assert (tmp_path / "pretrained.pt").exists()
