"""All-reduce bus bandwidth of NCCL through PyTorch itself (the peer of
allreduce_busbw.cpp). Run under torchrun; rank 0 prints one JSON line."""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=float, default=256)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    buffer = torch.ones(int(args.mib * 1024 * 1024 / 4), device="cuda")
    for _ in range(args.warmup):
        dist.all_reduce(buffer)
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.iterations):
        dist.all_reduce(buffer)
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / args.iterations
    size = buffer.numel() * 4
    busbw = size * 2 * (world - 1) / world / seconds / 1e9
    if rank == 0:
        print(json.dumps({"impl": "torch", "backend": "nccl", "world": world, "bytes": size,
                          "time_s": seconds, "busbw_gbps": busbw}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
