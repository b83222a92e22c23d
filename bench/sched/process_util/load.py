"""A GPU load of a known shape, for probing what NVML reports per process.

usage: load.py small|big SECONDS
  small: 512x512 fp32 products back to back (launch-bound: busy in time, few SMs)
  big:   8192x8192 bf16 products, half of each 100 ms period idle
Prints the products per second it reached, so a slowdown beside a neighbour shows.
"""
import sys
import time

import torch

kind, seconds = sys.argv[1], float(sys.argv[2])
if kind == "small":
    a = torch.randn(512, 512, device="cuda")
else:
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = a.clone()
torch.cuda.synchronize()
done, start = 0, time.time()
while time.time() - start < seconds:
    if kind == "small":
        for _ in range(200):
            a @ b
        torch.cuda.synchronize()
        done += 200
    else:
        period = time.time()
        while time.time() - period < 0.05:
            a @ b
            torch.cuda.synchronize()
            done += 1
        time.sleep(0.05)
print(f"{kind}: {done / (time.time() - start):.1f} products/s", flush=True)
