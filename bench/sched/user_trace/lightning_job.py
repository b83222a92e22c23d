"""A user's PyTorch Lightning job: a LightningModule around a torchvision
CNN, trained by Trainer(max_steps=...) on Fashion-MNIST held on the GPU
(resized to --size px, 3 channels), without checkpoints, logger or progress
bar. A Callback reports progress to colo and times the steps.

    python3 lightning_job.py --model resnet34 --batch 128 --opt sgd --steps 1800
    python3 lightning_job.py --model mobilenet_v3_large --batch 128 --opt adamw --bf16 --steps 2000

Builders for colo's [job.model] (input [3, size, size]; the LightningModule
is the nn.Module): lightning_job:build_resnet34,
lightning_job:build_mobilenet_v3_large.
"""
import torch
import torch.nn.functional as F

try:
    import lightning as L
except ImportError:  # the older package name, same API
    import pytorch_lightning as L

import common
import vision


class Classifier(L.LightningModule):
    """A torchvision model trained on batches drawn on its own device."""

    def __init__(self, name="resnet34", opt="sgd", lr=None, batch=128, size=224):
        super().__init__()
        self.model = vision.build(name)
        self.opt, self.lr, self.batch, self.size = opt, lr, batch, size
        self.images = self.labels = self.last_loss = None

    def forward(self, x):
        return self.model(x)

    def on_fit_start(self):
        self.images, self.labels = common.fashion_on(self.device)

    def training_step(self, batch, batch_idx):
        x, y = common.image_batch(self.images, self.labels, self.batch, self.size)
        loss = F.cross_entropy(self(x), y)
        self.last_loss = loss.detach()
        return loss

    def configure_optimizers(self):
        return common.optimizer(self.opt, self.parameters(), self.lr)


class Steps(torch.utils.data.Dataset):
    """One item per optimiser step: the batches themselves come from the GPU."""

    def __init__(self, steps):
        self.steps = steps

    def __len__(self):
        return self.steps

    def __getitem__(self, i):
        return i


class ColoProgress(L.Callback):
    """Times the steps and reports samples trained to colo (TrainingClock)."""

    def __init__(self, clock):
        self.clock = clock

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == 0:
            self.clock.start()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.clock.step_done(batch_idx)


def build_resnet34():
    return Classifier("resnet34")


def build_mobilenet_v3_large():
    return Classifier("mobilenet_v3_large")


def main():
    p = common.parser(__doc__.splitlines()[0], batch=128, opt="sgd")
    p.add_argument("--model", choices=["resnet34", "mobilenet_v3_large"], default="resnet34")
    p.add_argument("--size", type=int, default=224)
    args = p.parse_args()
    L.seed_everything(args.seed, verbose=False)
    device = common.device_of(args)
    module = Classifier(args.model, args.opt, args.lr, args.batch, args.size)
    clock = common.TrainingClock(args.steps, args.batch, device)
    trainer = L.Trainer(max_steps=args.steps, max_epochs=1, accelerator="gpu" if device.type == "cuda" else "cpu",
                        devices=1, precision="bf16-mixed" if args.bf16 else "32-true", callbacks=[ColoProgress(clock)],
                        enable_checkpointing=False, logger=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0)
    loader = torch.utils.data.DataLoader(Steps(args.steps), batch_size=None)
    trainer.fit(module, loader)
    clock.finish(loss=round(module.last_loss.item(), 4) if module.last_loss is not None else None,
                 trainable_params=sum(p.numel() for p in module.parameters() if p.requires_grad))


if __name__ == "__main__":
    main()
