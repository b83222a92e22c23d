"""colo from Python: memory estimates for your own PyTorch models
(colo.estimate), N copies of your own model trained as one fused array
(colo.fuse), colod's API (colo.Client), the C++ engine's training and
fused sweeps (colo.train, colo.sweep) and the plots of colo's results
(colo.plots).

The compiled core (colo._core) is built by `make` into build/python/colo:

    PYTHONPATH=build/python python3 -c "import colo"

See docs/python.md.
"""
from colo.client import Client, ColoError  # noqa: F401
from colo.engine import RunError, sweep, train  # noqa: F401
from colo.estimate import Estimate, estimate  # noqa: F401

__all__ = ["Client", "ColoError", "Estimate", "RunError", "estimate", "sweep", "train"]
