"""colo compare workload: 8 configurations of torchvision's ResNet-18 (its
own code, not colo's zoo model) on 32x32 inputs, batch 128, fp32, swept
through colo.fuse: the set-up of bench/fusion/user_models.py's ResNet-18
rows, so that compare's fused level can be checked against that benchmark
in the same call (bench/gpu/run.sh compare, COMPARE_AGREEMENT=1).

    colo compare examples/compare/torchvision_resnet18x8.py --steps 300

Inputs are random tensors resident on the device, as in the benchmark, so
the figures measure training, not loading."""
import torch
import torchvision

import colo.fuse

BATCH = 128
BATCHES_PER_EPOCH = 16


class ResidentBatches:
    """The same `count` random batches every epoch, held on the device."""

    def __init__(self, count, batch, device, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(count, batch, 3, 32, 32, generator=g).to(device)
        self.y = torch.randint(0, 10, (count, batch), generator=g).to(device)

    def __len__(self):
        return self.x.shape[0]

    def __iter__(self):
        return iter(zip(self.x, self.y))


def resnet18():
    return torchvision.models.resnet18(num_classes=10)


if __name__ == "__main__":
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cudnn.benchmark = True
    colo.fuse.compare_workload(resnet18, {"lr": [0.01, 0.02, 0.03, 0.04], "seed": [0, 1]},
                               ResidentBatches(BATCHES_PER_EPOCH, BATCH, device, 0),
                               ResidentBatches(2, BATCH, device, 1),
                               epochs=40, optimizer={"momentum": 0.9}, device=device, cuda_graph=True,
                               channels_last=True, on_epoch=None)
