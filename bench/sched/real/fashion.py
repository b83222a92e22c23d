"""Fashion-MNIST as tensors, read from the gzip'd IDX files colo's tests use."""
import gzip
import os

import numpy as np
import torch

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def load(directory=None, split="train"):
    """(images uint8 [N, 28, 28], labels int64 [N]) of `split` ("train" or "t10k")."""
    directory = directory or os.environ.get("FASHION_MNIST", DEFAULT_DIR)
    with gzip.open(os.path.join(directory, f"{split}-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    return torch.from_numpy(images.copy()), torch.from_numpy(labels.astype(np.int64))
