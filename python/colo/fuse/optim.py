"""SGD, Adam and AdamW over a fused module, every hyper-parameter per model:
model i is updated exactly as torch.optim would update it alone. The update
runs in colo's C++ fused optimiser (colo._core), without host
synchronisation, so a whole training step can be captured in a CUDA graph."""
from colo.fuse.stacking import FuseError

_DEFAULT_LR = {"sgd": None, "adam": 1e-3, "adamw": 1e-3}


def _per_model(value, n, name):
    if isinstance(value, (list, tuple)) and not (name == "betas" and len(value) == 2
                                                  and not isinstance(value[0], (list, tuple))):
        if len(value) != n:
            raise FuseError(f"colo.fuse.optimizer: {name} has {len(value)} values for {n} models")
        return list(value)
    return [value] * n


class FusedOptimizer:
    """The fused optimiser over `parameters` (each [N, ...]). Build it after
    moving the fused module to its device: it holds the parameters it was
    given and keeps its state beside them."""

    def __init__(self, parameters, specs):
        try:
            from colo import _core
        except ImportError as e:
            raise ImportError("colo.fuse's optimiser needs colo's compiled core (colo._core): run `make` "
                              f"and put build/python on PYTHONPATH ({e})") from e
        self.parameters = [p for p in parameters if p.requires_grad]
        self.specs = specs
        self._impl = _core.FusedOptimizer(self.parameters, specs)

    def zero_grad(self):
        """Every gradient set to zero in place (allocated the first time)."""
        self._impl.zero_grad()

    def step(self):
        """One update of every model."""
        self._impl.step()

    def set_learning_rate(self, lr):
        """Every model's learning rate from now on (one value for all)."""
        self._impl.set_learning_rate(float(lr))

    def set_lr_table(self, table):
        """Learning rates per step: `table` [steps, N] on the parameters' device."""
        self._impl.set_lr_table(table)

    def state(self):
        """First moments, then second moments, then the step counter (tensors)."""
        return self._impl.state()

    def steps_taken(self):
        return self._impl.steps_taken()


def optimizer(fused, name="sgd", *, lr=None, momentum=0.0, weight_decay=0.0, nesterov=False,
              betas=(0.9, 0.999), eps=1e-8):
    """A FusedOptimizer over `fused`'s parameters. `name` is sgd, adam or
    adamw; every hyper-parameter is one value for all models or a list of N
    (betas: one pair or N pairs). Defaults follow torch.optim; SGD needs lr."""
    name = name.lower()
    if name not in _DEFAULT_LR:
        raise FuseError(f"colo.fuse.optimizer: unknown optimiser '{name}' (sgd, adam, adamw)")
    lr = _DEFAULT_LR[name] if lr is None else lr
    if lr is None:
        raise FuseError("colo.fuse.optimizer: sgd needs lr")
    n = fused.models
    lrs, moms, wds = _per_model(lr, n, "lr"), _per_model(momentum, n, "momentum"), _per_model(weight_decay, n, "weight_decay")
    pairs, epss = _per_model(betas, n, "betas"), _per_model(eps, n, "eps")
    specs = [{"name": name, "lr": float(lrs[i]), "momentum": float(moms[i]), "weight_decay": float(wds[i]),
              "nesterov": bool(nesterov), "beta1": float(pairs[i][0]), "beta2": float(pairs[i][1]),
              "eps": float(epss[i])} for i in range(n)]
    return FusedOptimizer(fused.parameters(), specs)
