"""A CUDA process that writes to address 8 in a kernel (an MMU fault, a
fatal GPU exception), loaded from PTX through the driver API so that it
needs no compiler: test_shared_loader.py's MPS test and
bench/data/mps_fault_probe.py --fault illegal-address. Prints the
launch's and the synchronisation's status; exits 1 when the fault came."""
import ctypes

PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry bad() {
  .reg .b64 %rd<2>;
  .reg .b32 %r<2>;
  mov.u64 %rd1, 8;
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
"""

cu = ctypes.CDLL("libcuda.so.1")
dev, ctx, module, function = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
for step, call in (("cuInit", lambda: cu.cuInit(0)), ("cuDeviceGet", lambda: cu.cuDeviceGet(ctypes.byref(dev), 0)),
                   ("cuDevicePrimaryCtxRetain", lambda: cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)),
                   ("cuCtxSetCurrent", lambda: cu.cuCtxSetCurrent(ctx)),
                   ("cuModuleLoadData", lambda: cu.cuModuleLoadData(ctypes.byref(module), PTX)),
                   ("cuModuleGetFunction", lambda: cu.cuModuleGetFunction(ctypes.byref(function), module, b"bad"))):
    status = call()
    if status != 0:
        raise SystemExit(f"{step}: CUDA driver status {status}")
print("launch", cu.cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, None, None, None), flush=True)
status = cu.cuCtxSynchronize()
print("synchronize", status, flush=True)  # 700: CUDA_ERROR_ILLEGAL_ADDRESS
raise SystemExit(1 if status else 0)
