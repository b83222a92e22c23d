"""The memory estimate of a job's Python model, for colo's scheduler.

    python3 -m colo.job_estimate --builder mymodels:build_resnet --input 3x224x224 \\
        --batch 128 --optimizer sgd [--vocab 0] [--eval-batch 0] [--autocast bf16]
        [--no-keep-output] [--no-set-to-none] [--accumulation-steps 1] [--zero-grad WHERE]

colo runs this (estimate/python_model_estimator.cpp) in the job's working
directory, which is put on sys.path, when a job file names its model in
[job.model] or `colo submit --model` does. It imports the builder, calls it
with no arguments to get the nn.Module, and prints colo.estimate's answer as
one JSON line. The example input is one sample of --input: int64 token ids
below --vocab, or random values of the model's first floating parameter's
dtype. Any failure prints one line starting with "error:" and exits 1.
"""
import argparse
import dataclasses
import importlib
import json
import os
import sys


def build_model(builder):
    module_name, _, function_name = builder.partition(":")
    if not module_name or not function_name:
        raise ValueError(f"--builder must be module:function, got {builder!r}")
    module = importlib.import_module(module_name)
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ValueError(f"{module_name} has no function {function_name}")
    return function()


def input_dtype(model):
    """The dtype a float input takes: that of the model's first floating
    parameter (a bfloat16 model reads bfloat16), float32 without one."""
    import torch

    for p in model.parameters():
        if p.is_floating_point():
            return p.dtype
    return torch.float32


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--builder", required=True)
    parser.add_argument("--input", required=True, help="one sample's shape, e.g. 3x224x224")
    parser.add_argument("--vocab", type=int, default=0)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--eval-batch", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads the estimate may use")
    parser.add_argument("--autocast", choices=["bf16", "fp16"], default=None)
    parser.add_argument("--no-keep-output", dest="keep_output", action="store_false",
                        help="the loop computes loss = f(model(x)), holding no output through backward")
    parser.add_argument("--no-set-to-none", dest="set_to_none", action="store_false",
                        help="the loop calls optimizer.zero_grad(set_to_none=False)")
    parser.add_argument("--accumulation-steps", type=int, default=1)
    parser.add_argument("--zero-grad", choices=["before_forward", "after_forward"], default=None,
                        help="where the loop calls optimizer.zero_grad() (default: colo.estimate decides)")
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    try:
        import torch
        import colo

        shape = [int(d) for d in args.input.split("x")]
        model = build_model(args.builder)
        example = (torch.randint(0, args.vocab, [1] + shape) if args.vocab > 0
                   else torch.randn([1] + shape, dtype=input_dtype(model)))
        found = colo.estimate(model, example, batch_size=args.batch, optimizer=args.optimizer,
                              evaluation=args.eval_batch > 0, eval_batch_size=args.eval_batch or None,
                              threads=args.threads, autocast=args.autocast, keep_output=args.keep_output,
                              set_to_none=args.set_to_none, accumulation_steps=args.accumulation_steps,
                              zero_grad=args.zero_grad)
    except Exception as exc:  # one line for colo's log, whatever the user's code raised
        print(f"error: {type(exc).__name__}: {exc}".replace("\n", " "))
        return 1
    print(json.dumps({**dataclasses.asdict(found), "bytes_high": found.bytes_high}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
