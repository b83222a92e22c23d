"""A sweep of your own model as a `colo compare` workload: a script that
calls colo.fuse.compare_workload(...) runs as `colo compare SCRIPT.py`
asks (one configuration per process, or all of them fused in one), and as
a plain colo.fuse.sweep when run by itself."""
import json
import os

from colo.fuse.stacking import FuseError
from colo.fuse.sweep import configurations, sweep

ROLE = "COLO_COMPARE_ROLE"    # describe:PATH | only:I | fused
STEPS = "COLO_COMPARE_STEPS"  # colo compare --steps: optimiser steps per model
OUT = "COLO_COMPARE_OUT"      # the run's output directory (sweep.jsonl counts its samples)


def compare_workload(build_model, axes, train_batches, test_batches, **sweep_kwargs):
    """Trains colo.fuse.sweep(build_model, axes, train_batches, test_batches,
    **sweep_kwargs), or the part of it `colo compare` asked for:

    - describe:PATH writes {"configs": N} to PATH and trains nothing;
    - only:I trains configuration I alone (a process of the sequential,
      timeslice, mps, slots and scheduler levels);
    - fused trains every configuration as fused arrays in this process.

    `colo compare --steps S` caps every model at S optimiser steps. Returns
    what colo.fuse.sweep returns ([] for describe)."""
    role = os.environ.get(ROLE, "")
    if os.environ.get(STEPS):
        sweep_kwargs["max_steps"] = int(os.environ[STEPS])
    if os.environ.get(OUT):
        sweep_kwargs["out"] = os.environ[OUT]
    if role.startswith("describe:"):
        configs = configurations(axes, sweep_kwargs.get("sampling", "grid"), sweep_kwargs.get("count", 0),
                                 sweep_kwargs.get("seed", 0))
        with open(role[len("describe:"):], "w") as f:
            json.dump({"configs": len(configs)}, f)
        return []
    if role.startswith("only:"):
        sweep_kwargs.update(only=[int(role[len("only:"):])], max_array=1)
    elif role not in ("", "fused"):
        raise FuseError(f"colo.fuse.compare_workload: ${ROLE} is {role!r}; expected describe:PATH, only:I or fused")
    return sweep(build_model, axes, train_batches, test_batches, **sweep_kwargs)
