"""Prints the GPUs' NVML total-energy counters, summed, in joules: the
counter the driver keeps since it loaded (nvmlDeviceGetTotalEnergyConsumption,
Volta and later), read through pynvml when it is installed, else through
libnvidia-ml.so.1 directly. nvidia-smi has no query field for this counter.
Where CUDA_VISIBLE_DEVICES is set, only the GPUs it names (NVML indices or
UUID prefixes, as colo reads it) are summed, so a run pinned to one GPU of
a larger host counts that GPU alone. Exits 1, printing nothing, where
neither can read it. Cheap: no torch.

    python3 energy.py                               # 123456.789
    CUDA_VISIBLE_DEVICES=GPU-8f2c python3 energy.py # that GPU's counter
"""
import ctypes
import os
import sys


def visible(index, uuid):
    """Whether CUDA_VISIBLE_DEVICES (unset: every GPU) names the GPU of this NVML index and UUID."""
    names = os.environ.get("CUDA_VISIBLE_DEVICES")
    if names is None:
        return True
    for name in (n.strip() for n in names.split(",")):
        if (name.isdigit() and int(name) == index) or (name and not name.isdigit() and uuid.startswith(name)):
            return True
    return False


def with_pynvml():
    import pynvml

    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
        total_mj = 0
        for i in range(count):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            if visible(i, uuid.decode() if isinstance(uuid, bytes) else uuid):
                total_mj += pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        return total_mj / 1000.0
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
            handle, mj, uuid = ctypes.c_void_p(), ctypes.c_ulonglong(), ctypes.create_string_buffer(96)
            if nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0:
                raise OSError(f"no handle for GPU {i}")
            if nvml.nvmlDeviceGetUUID(handle, uuid, 96) != 0:
                raise OSError(f"no UUID for GPU {i}")
            if not visible(i, uuid.value.decode()):
                continue
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
