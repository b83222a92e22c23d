"""Adds the bf16 convolution-workspace table to a GPU profile measured before
profiles held one, measuring only that table on this GPU (what `colo gpus
--profile` now measures besides float32), and stores the result:

    PYTHONPATH=BUILD/python python3 bench/estimate/half_profile.py PROFILE.json KEY [--max-batch 256]

PROFILE.json is the earlier profile (as `colo gpus --profile` stored it);
KEY the name to store it under in the profile directory (COLO_PROFILE_DIR)."""
import argparse
import json
import sys
import time

import torch

from colo import _core, device_profile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("key")
    parser.add_argument("--max-batch", type=int, default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("half_profile.py: no CUDA GPU here")
    profile = json.load(open(args.profile))
    shapes = profile["conv_workspace"]["shapes"]
    batches = device_profile.profile_batches(shapes, max_batch=args.max_batch)
    device = torch.device("cuda", 0)
    torch.backends.cudnn.benchmark = False
    started = time.time()
    profile["conv_workspace_half"] = device_profile.conv_workspace_table(
        device, shapes, batches, torch.bfloat16, progress=lambda line: print(line, flush=True))
    path = _core.store_device_profile(json.dumps(profile), args.key)
    print(f"{len(shapes)} shapes at batches {batches[0]}-{batches[-1]} in bf16 in {time.time() - started:.0f} s; "
          f"stored as '{args.key}' in {path}")


if __name__ == "__main__":
    main()
