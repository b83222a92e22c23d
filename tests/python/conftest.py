"""Shared set-up of colo's Python tests: the package comes from build/python
(PYTHONPATH, set by CTest); COLO_EXECUTABLE names the built colo binary."""
import os

import pytest
import torch

torch.set_num_threads(1)


@pytest.fixture
def colo_executable():
    path = os.environ.get("COLO_EXECUTABLE", "")
    if not os.path.exists(path):
        pytest.fail(f"COLO_EXECUTABLE={path!r} is not the built colo binary (run the tests through ctest)")
    return path
