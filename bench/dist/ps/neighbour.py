"""A neighbour job for the uneven-worker runs, on the GPU it is given, until
killed. It shares that GPU with a colo dist worker by time-slicing (no MPS).

    neighbour.py [--work matmul|resnet] [--size N]

matmul (default): back-to-back N x N (8192) bf16 matrix products, a
compute-bound job that keeps the GPU busy all the time, so the time-sliced
worker gets about half of it. resnet: ResNet-18 on random 64x64 images, a
launch-bound job that leaves the worker most of the GPU (about 1.2x slower
on an H200). Prints "ready" once warm, then its own rate."""
import argparse
import time

import torch


def resnet_step(size):
    del size
    import torchvision
    model = torchvision.models.resnet18(num_classes=10).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.randn(128, 3, 64, 64, device="cuda")
    labels = torch.randint(0, 10, (128,), device="cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
    return step


def matmul_step(size):
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    out = torch.empty_like(a)

    def step():
        torch.matmul(a, b, out=out)
    return step


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", choices=("matmul", "resnet"), default="matmul")
    p.add_argument("--size", type=int, default=8192, help="matmul: the matrices' size")
    args = p.parse_args()
    step = {"matmul": matmul_step, "resnet": resnet_step}[args.work](args.size)
    steps, start = 0, time.time()
    while True:
        step()
        steps += 1
        if steps == 20:
            torch.cuda.synchronize()
            print("ready", flush=True)
        if steps % 500 == 0:
            torch.cuda.synchronize()
            print(f"{steps} steps, {steps / (time.time() - start):.1f} steps/s", flush=True)


if __name__ == "__main__":
    main()
