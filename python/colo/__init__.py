"""colo from Python: memory estimates for your own PyTorch models
(colo.estimate), N copies of your own model trained as one fused array
(colo.fuse), colod's API (colo.Client), the C++ engine's training and
fused sweeps (colo.train, colo.sweep), data-parallel training
(colo.dist.launch), progress callbacks for Hugging Face's Trainer and
Lightning (colo.callbacks) and the plots of colo's results (colo.plots).

The compiled core (colo._core) is built by `make` into build/python/colo:

    PYTHONPATH=build/python python3 -c "import colo"

See docs/python.md.
"""
from colo import callbacks  # noqa: F401
from colo.client import Client, ColoError  # noqa: F401
from colo.engine import RunError, train  # noqa: F401
from colo.engine import sweep as _sweep_spec
from colo.estimate import Estimate, estimate  # noqa: F401
from colo.progress import report_progress  # noqa: F401


def sweep(spec_or_build_model, *args, **kwargs):
    """A sweep file (`colo sweep SPEC`, zoo models, records of results.json),
    or, given a function that builds your model, colo.fuse.sweep over it
    (see colo.fuse.sweep for its arguments)."""
    if callable(spec_or_build_model):
        from colo.fuse.sweep import sweep as sweep_model
        return sweep_model(spec_or_build_model, *args, **kwargs)
    return _sweep_spec(spec_or_build_model, *args, **kwargs)


__all__ = ["Client", "ColoError", "Estimate", "RunError", "callbacks", "estimate", "report_progress", "sweep", "train"]
