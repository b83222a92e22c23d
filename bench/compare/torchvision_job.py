"""A plain PyTorch training script, as a user writes one: a torchvision model
trained a fixed number of steps on random 224 px images (work-bound: the
same work however long it takes). For colo compare's torchvision workload.
It reports its progress through colo.report_progress when colo is importable,
so colo compare can time its training apart from its start-up.

    python3 bench/compare/torchvision_job.py --model resnet18 --steps 60 --batch 64
"""
import argparse

import torch
import torch.nn.functional as F
import torchvision

try:
    from colo import report_progress
except ImportError:  # the script trains the same without colo
    def report_progress(samples):
        pass


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--size", type=int, default=224)
    args = p.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(num_classes=100).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch, 3, args.size, args.size, device=device)
    y = torch.randint(0, 100, (args.batch,), device=device)
    for step in range(args.steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        report_progress(samples=(step + 1) * args.batch)
    print(f"{args.model}: {args.steps} steps of {args.batch}, loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
