"""Adds to a GPU profile measured before profiles held them the convolution
workspaces `colo gpus --profile` now measures besides float32 contiguous ones,
measuring only those on this GPU, and stores the result:

    PYTHONPATH=BUILD/python python3 bench/estimate/extend_profile.py PROFILE.json KEY [--half] [--channels-last] \\
        [--depthwise-only] [--kernel K] [--shapes-file KEYS] [--max-batch 256] [--tables-out TABLES.json]

PROFILE.json is the earlier profile (as `colo gpus --profile` stored it); KEY
the name to store it under in the profile directory (COLO_PROFILE_DIR).
--half measures the bf16 table (`conv_workspace_half`) of every shape;
--shapes-file adds contiguous shapes the profile lacks (a grid grown since);
--channels-last adds each shape's channels-last twin (key ending "cl") that the
profile lacks to the float32 table and, where the profile has one, to the bf16
table (--depthwise-only, --kernel K: only those).
--remeasure float32|bf16 measures every contiguous shape of that table again,
by the method conv_workspace_bytes uses now, replacing its entries (with
--shapes-file: only the shapes listed, in their order).
--tables-out also writes just the measured entries, {"conv_workspace":
{"shapes": ...}, "conv_workspace_half": {"shapes": ...}}, for adding to colo's
built-in tables, after every shape: a run cut short (a device call's end)
keeps what it finished."""
import argparse
import json
import os
import sys
import time

import torch

from colo import _core, device_profile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("key")
    parser.add_argument("--half", action="store_true", help="measure the bf16 table")
    parser.add_argument("--channels-last", action="store_true", help="measure every shape channels last too")
    parser.add_argument("--depthwise-only", action="store_true",
                        help="channels-last twins of depthwise convolutions only (where the layout changes the "
                             "kernel most: a contiguous float32 one runs PyTorch's own, without workspace)")
    parser.add_argument("--kernel", type=int, default=None,
                        help="channels-last twins of convolutions of this kernel size only (about 3 s a shape "
                             "in float32 on an H200 at 9 batches)")
    parser.add_argument("--shapes-file", default=None,
                        help="contiguous shape keys, one a line (measure_conv_workspace --list-grid), to measure where "
                             "the profile lacks them: in float32, in bf16 where it has a bf16 table, and channels last "
                             "too with --channels-last")
    parser.add_argument("--remeasure", choices=("float32", "bf16"), default=None,
                        help="measure the contiguous shapes of this table again (only those listed with --shapes-file)")
    parser.add_argument("--max-batch", type=int, default=None)
    parser.add_argument("--tables-out", default=None)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("extend_profile.py: no CUDA GPU here")
    if not (args.half or args.channels_last or args.shapes_file or args.remeasure):
        sys.exit("extend_profile.py: nothing to measure: give --half, --channels-last, --shapes-file or --remeasure")
    profile = json.load(open(args.profile))
    contiguous = [k for k in profile["conv_workspace"]["shapes"] if not k.endswith("cl")]
    new = []
    if args.shapes_file:
        listed = [line.strip() for line in open(args.shapes_file) if line.strip()]
        for key in listed:
            device_profile.conv_geometry(key)  # a malformed key stops here, before any measuring
        new = listed if args.remeasure else sorted(set(listed) - set(contiguous))
        contiguous = new if args.remeasure else contiguous + new
    batches = device_profile.profile_batches(profile["conv_workspace"]["shapes"], max_batch=args.max_batch)
    device = torch.device("cuda", 0)
    torch.backends.cudnn.benchmark = False
    started, measured = time.time(), {}
    measured_already = set(profile["conv_workspace"]["shapes"])
    twins = [k + "cl" for k in contiguous if k + "cl" not in measured_already
             and (not args.depthwise_only or device_profile.is_depthwise(k))
             and (args.kernel is None or device_profile.conv_geometry(k)[2] == args.kernel)] if args.channels_last else []

    def write_tables():
        if args.tables_out:
            with open(args.tables_out + ".part", "w") as out:
                json.dump({n: {"shapes": s} for n, s in measured.items()}, out)
            os.replace(args.tables_out + ".part", args.tables_out)

    def table(name, shapes, dtype):
        print(f"measuring {len(shapes)} shapes in {dtype}", flush=True)
        measured[name] = {}
        for i, key in enumerate(shapes):  # a run cut short keeps every shape it finished
            measured[name].update(device_profile.conv_workspace_table(device, [key], batches, dtype)["shapes"])
            write_tables()
            if (i + 1) % 10 == 0:
                print(f"{name}: {i + 1} of {len(shapes)} shapes ({time.time() - started:.0f} s)", flush=True)

    plan = []  # float32 first
    if args.remeasure == "float32":
        plan.append(("conv_workspace", contiguous, torch.float32))
    elif args.remeasure == "bf16":
        plan.append(("conv_workspace_half", contiguous, torch.bfloat16))
    else:
        if new or twins:
            plan.append(("conv_workspace", new + twins, torch.float32))
        if args.half:
            plan.append(("conv_workspace_half", contiguous + twins, torch.bfloat16))
        elif (new or twins) and "conv_workspace_half" in profile:
            plan.append(("conv_workspace_half", new + twins, torch.bfloat16))
    for name, shapes, dtype in plan:
        table(name, shapes, dtype)
    for name, shapes in measured.items():
        profile.setdefault(name, {"shapes": {}})["shapes"].update(shapes)
    path = _core.store_device_profile(json.dumps(profile), args.key)
    counts = ", ".join(f"{name} +{len(shapes)}" for name, shapes in measured.items())
    print(f"{counts} shapes at batches {batches[0]}-{batches[-1]} in {time.time() - started:.0f} s; "
          f"stored as '{args.key}' in {path}")


if __name__ == "__main__":
    main()
