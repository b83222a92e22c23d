"""GPU load for the GPU-machine checks: holds HOLD_GIB of device memory and
runs large float32 matrix products for SECONDS (or sleeps, with --idle)."""
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
hold_gib = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
size = int(sys.argv[3]) if len(sys.argv) > 3 else 8192
held = torch.empty(int(hold_gib * 2**30), dtype=torch.uint8, device="cuda") if hold_gib > 0 else None
a = torch.randn(size, size, device="cuda")
b = torch.randn(size, size, device="cuda")
end = time.time() + seconds
products = 0
while time.time() < end:
    for _ in range(8):
        c = a @ b
    torch.cuda.synchronize()
    products += 8
print(f"products {products} in {seconds:.0f} s", flush=True)
