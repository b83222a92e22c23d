"""A neighbour training job for the uneven-worker runs: ResNet-18 on random
64x64 images, as fast as it can, on the GPU it is given, until killed. It
shares that GPU with a colo dist worker by time-slicing (no MPS), so that
worker trains at roughly half speed. Prints its own steps/s."""
import time

import torch
import torchvision


def main():
    model = torchvision.models.resnet18(num_classes=10).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.randn(128, 3, 64, 64, device="cuda")
    labels = torch.randint(0, 10, (128,), device="cuda")
    steps, start = 0, time.time()
    while True:
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(inputs), labels).backward()
        optimizer.step()
        steps += 1
        if steps == 20:
            torch.cuda.synchronize()
            print("ready", flush=True)
        if steps % 500 == 0:
            torch.cuda.synchronize()
            print(f"{steps} steps, {steps / (time.time() - start):.1f} steps/s", flush=True)


if __name__ == "__main__":
    main()
