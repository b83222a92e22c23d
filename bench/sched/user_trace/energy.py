"""Prints the GPUs' NVML total-energy counters, summed, in joules: the
counter the driver keeps since it loaded (nvmlDeviceGetTotalEnergyConsumption,
Volta and later), read through pynvml when it is installed, else through
libnvidia-ml.so.1 directly. nvidia-smi has no query field for this counter.
Exits 1, printing nothing, where neither can read it. Cheap: no torch.

    python3 energy.py        # 123456.789
"""
import ctypes
import sys


def with_pynvml():
    import pynvml

    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
        return sum(pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(i))
                   for i in range(count)) / 1000.0  # mJ
    finally:
        pynvml.nvmlShutdown()


def with_ctypes():
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    if nvml.nvmlInit_v2() != 0:
        raise OSError("nvmlInit failed")
    try:
        count = ctypes.c_uint()
        if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
            raise OSError("nvmlDeviceGetCount failed")
        total_mj = 0
        for i in range(count.value):
            handle, mj = ctypes.c_void_p(), ctypes.c_ulonglong()
            if nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0:
                raise OSError(f"no handle for GPU {i}")
            if nvml.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(mj)) != 0:
                raise OSError(f"GPU {i} has no energy counter")
            total_mj += mj.value
        return total_mj / 1000.0
    finally:
        nvml.nvmlShutdown()


def main():
    for read in (with_pynvml, with_ctypes):
        try:
            print(f"{read():.3f}")
            return 0
        except Exception as e:  # noqa: BLE001 -- try the next way; say why at the end
            error = e
    print(f"energy.py: no NVML energy counter: {error}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
