"""Progress callbacks for Hugging Face's Trainer and PyTorch Lightning: one
line, and a job reports the samples it has trained to colo's scheduler
(colo.report_progress), which then measures its SM share while it trains
instead of guessing from its start-up.

    trainer = transformers.Trainer(..., callbacks=[colo.callbacks.hf_trainer()])
    trainer = lightning.Trainer(..., callbacks=[colo.callbacks.lightning()])

Outside colo (no $COLO_PROGRESS_FILE) they do nothing. Each imports its
framework only when called, so `import colo` never needs either.
"""
from colo.progress import flush, report_progress


def _hf_samples_per_step(args):
    """Samples one optimiser step of Hugging Face's Trainer trains in this
    process: the per-device batch times the accumulation steps."""
    return int(getattr(args, "per_device_train_batch_size", 1) or 1) * int(
        getattr(args, "gradient_accumulation_steps", 1) or 1)


def hf_trainer():
    """A transformers.TrainerCallback that reports, after every optimiser
    step, global_step x per-device batch x gradient accumulation samples."""
    from transformers import TrainerCallback

    class ColoProgress(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            report_progress(samples=state.global_step * _hf_samples_per_step(args))
            return control

        def on_train_end(self, args, state, control, **kwargs):
            flush()  # the final count now, before evaluation or saving
            return control

    return ColoProgress()


def batch_size_of(batch):
    """The number of samples in a Lightning batch: the first dimension of
    its first tensor, looked for in tuples, lists and dicts; 0 when none."""
    if hasattr(batch, "shape") and len(batch.shape) > 0:
        return int(batch.shape[0])
    items = batch.values() if isinstance(batch, dict) else batch if isinstance(batch, (list, tuple)) else ()
    for item in items:
        found = batch_size_of(item)
        if found:
            return found
    return 0


def _lightning_callback_base():
    try:
        from lightning.pytorch import Callback
    except ImportError:
        from pytorch_lightning import Callback
    return Callback


def lightning():
    """A Lightning Callback that counts the samples of every training batch
    (batch_size_of) and reports the running total after each."""
    base = _lightning_callback_base()

    class ColoProgress(base):
        def __init__(self):
            super().__init__()
            self.samples = 0

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            self.samples += batch_size_of(batch)
            report_progress(samples=self.samples)

        def on_train_end(self, trainer, pl_module):
            flush()

    return ColoProgress()
