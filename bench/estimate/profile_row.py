"""Where colo.estimate spends its time on one of real_training's rows: the
row estimated once (its wall time), then again under cProfile, whose top
functions by cumulative time are printed.

    PYTHONPATH=build/python python3 bench/estimate/profile_row.py MODEL SETUP BATCH [--threads N] [--top K]

Made for the rows that take seconds on the GPU host's torch 2.x and well under
one on torch 1.13 (DenseNet-121 frozen b64: 11.4 s there, 0.7 s on a 2-core
Debian machine), to tell the recording, the replay and the watchers apart."""
import argparse
import cProfile
import io
import os
import pstats
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import real_training as rt  # noqa: E402  (beside this file)
import torch  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("setup")
    parser.add_argument("batch", type=int)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)  # from the start, as colo's scheduler starts an estimate
    rows = [r for r in rt.all_rows()
            if (r["model"], r["setup"], r["batch"]) == (args.model, args.setup, args.batch)]
    if not rows:
        sys.exit(f"profile_row.py: real_training has no row {args.model} {args.setup} b{args.batch}")
    first = rt.estimate_row(rows[0], args.threads)
    if "colo_s" not in first:
        sys.exit(f"profile_row.py: {args.model} {args.setup} b{args.batch}: {first}")
    profile = cProfile.Profile()
    profile.enable()
    again = rt.estimate_row(rows[0], args.threads)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(args.top)
    print(f"{args.model} {args.setup} b{args.batch}: {first['colo_s']:.2f} s, again {again['colo_s']:.2f} s "
          f"(profiled), {args.threads} threads")
    print(text.getvalue())


if __name__ == "__main__":
    main()
