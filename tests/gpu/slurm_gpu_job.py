"""A GPU job for tests/gpu/slurm_on_gpu.sh: holds GIB of device memory and
multiplies matrices for SECONDS. Dies of CUDA OOM (exit 1, PyTorch's message)
when its MPS memory limit is below what it allocates."""
import argparse
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--gib", type=float, required=True)
p.add_argument("--seconds", type=float, default=15)
a = p.parse_args()
held = torch.empty(int(a.gib * (1 << 30)) // 4, dtype=torch.float32, device="cuda")
x = torch.randn(2048, 2048, device="cuda")
end = time.time() + a.seconds
steps = 0
while time.time() < end:
    x = torch.tanh(x @ x)
    steps += 1
torch.cuda.synchronize()
print(f"held {a.gib} GiB, {steps} steps, peak {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB allocated")
