"""The most bytes a real_training row's tensors hold at once on this machine's
CPU, beside its parameters and buffers: every tensor an op makes is followed
until the last one sharing its memory dies, through two training steps
(forward, backward, optimiser) of the row's own loop. No allocator rounding
and no cuDNN workspace: a check of which tensors a step keeps alive, for
comparing with colo's replayed allocated peak (COLO_ESTIMATE_TRACE) and a
GPU's (phase_peaks.py) without a GPU.

    PYTHONPATH=BUILD/python:python python3 bench/estimate/cpu_live_peak.py MODEL SETUP

Prints the peak in MiB and the phase and op that reached it."""
import os
import sys
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_training as rt  # noqa: E402  (beside this file)
import setups  # noqa: E402
from colo.estimate import _storage_of as storage_of  # noqa: E402  (the estimator's own notion of a tensor's memory)


def live_peak(row, steps=2):
    """(bytes, "phase op") of the row's live-tensor peak over `steps` steps."""
    model = setups.build(row, rt.MODELS).train()
    one = setups.example(row, rt.MODELS)
    x = one.expand(row["batch"], *one.shape[1:]).contiguous()
    counted = {storage_of(t)[0] for t in list(model.parameters()) + list(model.buffers())}
    live, now, peak, phase = {}, [0], [0, ""], ["forward"]

    def release(address):
        entry = live.get(address)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            now[0] -= entry[0]
            del live[address]

    class Follow(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor):
                    continue
                address, nbytes = storage_of(t)
                if address in counted or nbytes == 0:
                    continue
                if address not in live:
                    live[address] = [nbytes, 0]
                    now[0] += nbytes
                    if now[0] > peak[0]:
                        peak[0], peak[1] = now[0], f"{phase[0]} {func}"
                live[address][1] += 1
                weakref.finalize(t, release, address)
            return out

    optimizer = setups.make_optimizer(row["optimizer"], model)
    with Follow():
        for _ in range(steps):
            optimizer.zero_grad()
            phase[0] = "forward"
            loss = setups.loss_of(model(x))
            phase[0] = "backward"
            loss.backward()
            phase[0] = "optimizer"
            optimizer.step()
            del loss
    return peak[0], peak[1]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = [r for r in rt.all_rows() if r["model"] == sys.argv[1] and r["setup"] == sys.argv[2]]
    if not rows:
        sys.exit(f"cpu_live_peak.py: no row {sys.argv[1]} {sys.argv[2]} in real_training.py")
    nbytes, where = live_peak(rows[0])
    print(f"{sys.argv[1]} {sys.argv[2]} b{rows[0]['batch']}: {nbytes / 2**20:.0f} MiB live beside the parameters, "
          f"at {where}")


if __name__ == "__main__":
    main()
