"""colo.callbacks: Hugging Face's Trainer and Lightning report progress to
colo. The frameworks are not on the CPU machine: stand-ins of their callback
base classes take their place, and the hooks are called as the trainers
call them."""
import json
import sys
import types
from types import SimpleNamespace

import pytest
import torch

import colo
import colo.progress


@pytest.fixture
def progress_file(tmp_path, monkeypatch):
    path = tmp_path / "job.progress"
    monkeypatch.setenv("COLO_PROGRESS_FILE", str(path))
    monkeypatch.setenv("COLO_PROGRESS_INTERVAL_S", "0.000001")  # every call writes
    monkeypatch.setattr(colo.progress, "_state", {"start": None, "last_write": 0.0, "pending": None})
    return path


def stand_in(monkeypatch, name, **attributes):
    module = types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_the_hf_trainer_callback_reports_steps_times_the_batch_and_the_accumulation(progress_file, monkeypatch):
    stand_in(monkeypatch, "transformers", TrainerCallback=type("TrainerCallback", (), {}))
    callback = colo.callbacks.hf_trainer()
    args = SimpleNamespace(per_device_train_batch_size=16, gradient_accumulation_steps=4)
    control = object()
    for step in (1, 2, 3):
        assert callback.on_step_end(args, SimpleNamespace(global_step=step), control) is control
    assert json.loads(progress_file.read_text())["samples"] == 3 * 16 * 4


def test_the_lightning_callback_counts_the_samples_of_each_batch_whatever_its_form(progress_file, monkeypatch):
    lightning = stand_in(monkeypatch, "lightning")
    lightning.pytorch = stand_in(monkeypatch, "lightning.pytorch", Callback=type("Callback", (), {}))
    callback = colo.callbacks.lightning()
    batches = [(torch.zeros(8, 3), torch.zeros(8)),
               {"input_ids": torch.zeros(5, 10), "labels": torch.zeros(5, 10)},
               [[torch.zeros(7, 2)], torch.zeros(7)]]
    for index, batch in enumerate(batches):
        callback.on_train_batch_end(None, None, None, batch, index)
    assert json.loads(progress_file.read_text())["samples"] == 8 + 5 + 7


def test_a_batch_without_a_tensor_counts_nothing():
    assert colo.callbacks.batch_size_of({"text": ["a", "b"]}) == 0
    assert colo.callbacks.batch_size_of(torch.tensor(3.0)) == 0, "a scalar has no sample dimension"


def test_outside_colo_the_callbacks_write_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("COLO_PROGRESS_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    stand_in(monkeypatch, "transformers", TrainerCallback=type("TrainerCallback", (), {}))
    colo.callbacks.hf_trainer().on_step_end(SimpleNamespace(per_device_train_batch_size=2),
                                            SimpleNamespace(global_step=1), None)
    assert list(tmp_path.iterdir()) == []


def test_a_real_hf_trainer_reports_its_samples(progress_file, tmp_path):
    """Where transformers is installed (the GPU machine): three steps of a
    one-layer GPT-2 made from a config, on the CPU, nothing downloaded."""
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=16)
    model = transformers.GPT2LMHeadModel(config)
    ids = torch.randint(0, 100, (16, 16))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = transformers.TrainingArguments(str(tmp_path / "out"), per_device_train_batch_size=2,
                                          gradient_accumulation_steps=2, max_steps=3, report_to=[],
                                          save_strategy="no", logging_strategy="no", use_cpu=True)
    transformers.Trainer(model, args, train_dataset=data, callbacks=[colo.callbacks.hf_trainer()]).train()
    assert json.loads(progress_file.read_text())["samples"] == 3 * 2 * 2


def test_a_real_lightning_trainer_reports_its_samples(progress_file):
    """Where Lightning is installed (the GPU machine): three batches of 2."""
    pl = pytest.importorskip("lightning.pytorch")

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 2)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return torch.nn.functional.cross_entropy(self.layer(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randint(0, 2, (8,))),
                                       batch_size=2)
    trainer = pl.Trainer(max_steps=3, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         callbacks=[colo.callbacks.lightning()])
    trainer.fit(Tiny(), data)
    assert json.loads(progress_file.read_text())["samples"] == 3 * 2
