"""A user's plain PyTorch training script, as the scheduler trace runs it: a
torchvision CNN trained on Fashion-MNIST (resized to --res px, 3 channels,
normalised) for a fixed number of steps (work-bound, never a fixed time).
The whole set sits on the device; batches are random draws. Prints its
throughput and final loss.

    python3 vision_job.py --model resnet18 --res 64 --batch 128 --opt sgd --steps 600
"""
import argparse
import os
import time

import torch
import torch.nn.functional as F
import torchvision

import fashion


def build(name):
    """The torchvision model `name` with 10 classes (no pretrained weights)."""
    return getattr(torchvision.models, name)(num_classes=10)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="resnet18")
    p.add_argument("--res", type=int, default=64)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--opt", choices=["sgd", "adam"], default="sgd")
    p.add_argument("--lr", type=float, default=None)
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    # A hyper-parameter search as a colo job array: the index picks the seed
    # and scales the learning rate.
    index = int(os.environ.get("COLO_ARRAY_INDEX", "-1"))
    scale = [1.0, 0.5, 2.0, 0.25][index % 4] if index >= 0 else 1.0
    seed = args.seed if index < 0 else index
    # Data-parallel under torchrun (a multi-GPU job): one process per GPU.
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.manual_seed(seed)
    device = f"cuda:{rank}" if torch.cuda.is_available() else "cpu"
    if world > 1:
        torch.cuda.set_device(rank)
        torch.distributed.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    images, labels = fashion.load()
    images, labels = images.to(device), labels.to(device)
    model = build(args.model).to(device)
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank] if device != "cpu" else None)
    if args.opt == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=(args.lr or 0.05) * scale, momentum=0.9, weight_decay=5e-4)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=(args.lr or 1e-3) * scale)
    mean, std = 0.286, 0.353
    start = time.time()
    for step in range(args.steps):
        idx = torch.randint(0, images.shape[0], (args.batch,), device=device)
        x = images[idx].unsqueeze(1).float().div_(255).sub_(mean).div_(std)
        x = F.interpolate(x, size=(args.res, args.res), mode="bilinear", align_corners=False).expand(-1, 3, -1, -1)
        loss = F.cross_entropy(model(x), labels[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    final = loss.item()
    elapsed = time.time() - start
    print(f"{args.model} res {args.res} batch {args.batch} {args.opt} rank {rank}/{world}: {args.steps} steps in "
          f"{elapsed:.1f} s, {args.steps * args.batch / elapsed:.0f} samples/s, loss {final:.3f}", flush=True)
    if world > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
