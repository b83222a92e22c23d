"""Measures this machine's GPU for colo.estimate and stores the profile.

    colo gpus --profile [--gpu N]          (runs: python3 -m colo.device_profile --gpu N)

What a training process takes on a GPU beyond its own tensors differs per GPU
model and driver: the CUDA context with cuBLAS and cuDNN loaded, the
workspaces cuBLAS keeps in PyTorch's caching allocator, and the workspace
cuDNN takes for each convolution. This measures the three on GPU N with this
PyTorch and stores them under the GPU's short name ("h100", "h200", "a100")
in colo's profile directory, where colo.estimate(..., gpu=NAME) and every
estimate made on a machine with that GPU read them. The convolution shapes
and batch sizes are those of colo's built-in H100 profile; the ratios of
measured to replayed reservation (`fragmentation`) are the built-in ones.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F


def process_footprint_bytes(pid):
    """This process's memory on the GPUs as nvidia-smi lists it (what NVML counts)."""
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    total = 0
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 2 and fields[0] == str(pid) and fields[1].isdigit():
            total += int(fields[1]) << 20
    return total


def warm_up(device):
    """One training step of a small CNN and a linear layer in float32 and under
    bf16 autocast: loads the CUDA context, cuBLAS, cuDNN and the kernels a
    training process loads."""
    conv = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
                               torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.AdaptiveAvgPool2d(1),
                               torch.nn.Flatten(), torch.nn.Linear(64, 10)).to(device)
    linear = torch.nn.Linear(1024, 1024).to(device)
    opt = torch.optim.AdamW(list(conv.parameters()) + list(linear.parameters()))
    for dtype in (None, torch.bfloat16):
        with torch.autocast("cuda", dtype=dtype or torch.float32, enabled=dtype is not None):
            loss = F.cross_entropy(conv(torch.randn(8, 3, 32, 32, device=device)),
                                   torch.zeros(8, dtype=torch.long, device=device))
            loss = loss + linear(torch.randn(64, 1024, device=device)).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    torch.cuda.synchronize(device)


def context_and_library_bytes(device):
    """(context, library workspace): the process's footprint beyond what the
    caching allocator reserves, and what the allocator still holds once every
    tensor of the warm-up is gone (cuBLAS's workspaces)."""
    warm_up(device)
    torch.cuda.empty_cache()
    torch.cuda.synchronize(device)
    library = torch.cuda.memory_reserved(device)
    footprint = process_footprint_bytes(os.getpid())
    if footprint <= torch.cuda.memory_reserved(device):
        raise RuntimeError("nvidia-smi lists no GPU memory for this process (a container that hides its pids?): "
                           "the CUDA context cannot be measured here")
    return footprint - torch.cuda.memory_reserved(device), library


def cublas_workspace_bytes(device):
    """One cuBLAS handle's workspace: the largest allocation still live once
    the warm-up's tensors are gone and the cache is emptied (what is left are
    the workspaces cuBLAS took from the caching allocator); 0 when none is."""
    sizes = [block["size"] for segment in torch.cuda.memory_snapshot() if segment["device"] == device.index
             for block in segment["blocks"] if block["state"] == "active_allocated"]
    return max(sizes, default=0)


def conv_geometry(key):
    """(in, out, kh, kw, stride, padding, groups, h, w, channels_last) of a
    ConvGeometry key such as c16o16k3x3s1p1g1h32w32 (contiguous) or
    c16o16k3x3s1p1g1h32w32cl (channels last)."""
    import re

    m = re.fullmatch(r"c(\d+)o(\d+)k(\d+)x(\d+)s(\d+)p(\d+)g(\d+)h(\d+)w(\d+)(cl)?", key)
    if not m:
        raise ValueError(f"malformed convolution key {key!r}")
    return tuple(int(v) for v in m.groups()[:9]) + (m.group(10) is not None,)


def is_depthwise(key):
    """Whether convolution `key` is depthwise: a group a channel (more than one)."""
    cin, _cout, _kh, _kw, _stride, _padding, groups, *_ = conv_geometry(key)
    return groups == cin > 1


CHANNELS_LAST_CHOICES = ("none", "depthwise", "all")
CHANNELS_LAST_MAX_BATCH = 256  # channels-last twins are measured at batches up to this


def with_channels_last(shapes, which="all"):
    """The contiguous convolution keys of `shapes`, with the channels-last twins
    of `which` of them: "all", "depthwise" (where the layout changes the kernel
    most: a contiguous float32 depthwise convolution runs PyTorch's own kernel,
    a channels-last one cuDNN's with a workspace) or "none"."""
    contiguous = {k for k in shapes if not k.endswith("cl")}

    def wanted(key):
        return which == "all" or (which == "depthwise" and is_depthwise(key))

    return sorted(contiguous | {k + "cl" for k in contiguous if wanted(k)})


def _allocated_block(t):
    return max(512, (t.numel() * t.element_size() + 511) // 512 * 512)


def peak_of_temporaries(events):
    """The most bytes that allocations freed again within `events` held at
    once, by their requested sizes: a kernel's workspace, from the caching
    allocator's trace of one call (`events`: (action, address, size) in order,
    actions "alloc" and "free_completed"; allocations still live at the end,
    the result's, do not count)."""
    freed_after = {}  # index of an alloc -> whether its block is freed later
    open_at = {}
    for i, (action, address, _size) in enumerate(events):
        if action == "alloc":
            open_at[address] = i
            freed_after[i] = False
        elif action == "free_completed" and address in open_at:
            freed_after[open_at.pop(address)] = True
    live, peak, size_at = 0, 0, {}
    for i, (action, address, size) in enumerate(events):
        if action == "alloc" and freed_after[i]:
            size_at[address] = size
            live += size
            peak = max(peak, live)
        elif action == "free_completed" and address in size_at:
            live -= size_at.pop(address)
    return peak


def _traced(device, run):
    """run() under the caching allocator's trace: [(action, address, size)],
    or None where this torch cannot trace it (before 2.1) or the trace holds
    no allocation (then the caller measures by the allocator's peak)."""
    memory = torch.cuda.memory
    try:
        memory._record_memory_history(enabled="all", context=None, max_entries=100000)
    except (TypeError, AttributeError, RuntimeError):
        return None
    try:
        run()
        torch.cuda.synchronize(device)
        traces = memory._snapshot().get("device_traces", [])
    finally:
        memory._record_memory_history(enabled=None)
    index = device.index or 0
    events = [(e["action"], e.get("addr"), e.get("size", 0)) for e in (traces[index] if index < len(traces) else [])]
    # The kernel's result is always an allocation: a trace without one recorded nothing.
    return events if any(action == "alloc" for action, _, _ in events) else None


def conv_workspace_bytes(device, key, batch, dtype=torch.float32, by_trace=True):
    """{pass: bytes} of cuDNN's workspace for the forward, input-gradient and
    weight-gradient kernels of convolution `key` at `batch` in `dtype`: the
    bytes the kernel's temporaries asked for at once, beyond its operands and
    result, from the caching allocator's trace (its peak of allocated blocks
    overstates them where a request takes a cached block whole, by up to 1 MiB,
    and the replay then cuts segments otherwise: torch before 2.1 falls back to
    that peak; `by_trace=False` takes it anyway). A pass that does not fit on
    the GPU is left out."""
    cin, cout, kh, kw, stride, padding, groups, h, w, channels_last = conv_geometry(key)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    found = {}
    try:
        x = torch.randn(batch, cin, h, w, device=device, dtype=dtype).to(memory_format=layout)
        weight = torch.randn(cout, cin // groups, kh, kw, device=device, dtype=dtype).to(memory_format=layout)
        y = F.conv2d(x, weight, None, stride, padding, 1, groups)
        grad = torch.randn_like(y)
    except torch.cuda.OutOfMemoryError:
        return found
    passes = {"forward": None, "input_grad": [True, False, False], "weight_grad": [False, True, False]}
    for name, mask in passes.items():
        outcome = []

        def run(mask=mask, outcome=outcome):
            if mask is None:
                outcome.append(F.conv2d(x, weight, None, stride, padding, 1, groups))
            else:
                grads = torch.ops.aten.convolution_backward(grad, x, weight, None, [stride, stride],
                                                            [padding, padding], [1, 1], False, [0, 0], groups, mask)
                outcome.append(grads[0] if mask[0] else grads[1])

        try:
            events = _traced(device, run) if by_trace else None
            if events is not None:
                found[name] = peak_of_temporaries(events)
            else:  # the allocator's peak beyond what was live before and the result
                outcome.clear()
                torch.cuda.synchronize(device)
                before = torch.cuda.memory_allocated(device)
                torch.cuda.reset_peak_memory_stats(device)
                run()
                torch.cuda.synchronize(device)
                found[name] = max(0, torch.cuda.max_memory_allocated(device) - before - _allocated_block(outcome[0]))
        except torch.cuda.OutOfMemoryError:
            pass
        outcome.clear()  # the result, before the next pass
    return found


def profile_batches(shapes, quick=False, max_batch=None):
    """The batches a profile measures each convolution at: every batch of the
    reference table's `shapes`; only 32, 128 and 512 when `quick`; only those
    up to `max_batch` when given (the smallest one at least)."""
    batches = sorted({b for passes in shapes.values() for points in passes.values() for b, _ in points})
    if quick:
        batches = [b for b in batches if b in (32, 128, 512)] or batches[:3]
    if max_batch is not None:
        batches = [b for b in batches if b <= max_batch] or batches[:1]
    return batches


def conv_workspace_table(device, shapes, batches, dtype, progress=None):
    """{"shapes": {key: {pass: [[batch, bytes], ...]}}}: each of `shapes` at each of `batches` in `dtype`."""
    table, started = {}, time.time()
    for i, key in enumerate(sorted(shapes)):
        points = {"forward": [], "input_grad": [], "weight_grad": []}
        for batch in batches:
            for name, value in conv_workspace_bytes(device, key, batch, dtype).items():
                points[name].append([batch, value])
        table[key] = points
        torch.cuda.empty_cache()
        if progress and (i + 1) % 25 == 0:
            progress(f"convolutions in {str(dtype).split('.')[-1]}: {i + 1} of {len(shapes)} shapes "
                     f"({time.time() - started:.0f} s)")
    return {"shapes": table}


def measure(device_index, quick=False, progress=None, max_batch=None, half=True, channels_last="depthwise"):
    """This GPU's profile as colo stores it (a dict; see device_profile_to_json
    in C++); convolutions at the reference table's batches up to `max_batch`
    (all when None), or at 32, 128 and 512 only when `quick`; in float32, and
    in bfloat16 too when `half` (cuDNN picks other kernels for it, whose
    workspaces are not float32's halved); each shape contiguous and, when
    `channels_last` ("depthwise", "all"; see with_channels_last) says so, channels
    last too (other kernels again), at batches up to CHANNELS_LAST_MAX_BATCH
    only (slow kernels: about 3 s a depthwise shape in float32 at the 9 batches
    up to 256 on an H200; larger batches take the largest measured, scaled)."""
    from colo import _core

    device = torch.device("cuda", device_index)
    torch.cuda.set_device(device)
    torch.backends.cudnn.benchmark = False  # as training runs by default: cuDNN's heuristics pick
    reference = json.loads(_core.reference_device_profile_json())
    context, library = context_and_library_bytes(device)
    cublas = cublas_workspace_bytes(device)
    shapes = reference["conv_workspace"]["shapes"]
    batches = profile_batches(shapes, quick, max_batch)
    shapes = with_channels_last(shapes, channels_last)
    contiguous = [k for k in shapes if not k.endswith("cl")]
    twins = [k for k in shapes if k.endswith("cl")]
    twin_batches = [b for b in batches if b <= CHANNELS_LAST_MAX_BATCH] or batches[:1]

    def table(dtype):
        found = conv_workspace_table(device, contiguous, batches, dtype, progress)
        found["shapes"].update(conv_workspace_table(device, twins, twin_batches, dtype, progress)["shapes"])
        return found

    name = torch.cuda.get_device_name(device)
    profile = {"name": f"{name}, PyTorch {torch.__version__.split('+')[0]}, CUDA {torch.version.cuda}",
               "gpu": name, "context_bytes": int(context), "library_workspace_bytes": int(library),
               "cublas_workspace_bytes": int(cublas), "fragmentation": reference["fragmentation"],
               "conv_workspace": table(torch.float32)}
    if half:
        profile["conv_workspace_half"] = table(torch.bfloat16)
    return profile


def main(argv=None):
    parser = argparse.ArgumentParser(prog="colo gpus --profile", description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", type=int, default=0, help="which GPU (default 0)")
    parser.add_argument("--quick", action="store_true", help="convolutions at batch 32, 128 and 512 only")
    parser.add_argument("--max-batch", type=int, default=None,
                        help="convolutions at batches up to this only (the rest extrapolated from them)")
    parser.add_argument("--no-half", dest="half", action="store_false",
                        help="convolutions in float32 only (bf16/fp16 ones then take float32's workspaces, halved)")
    parser.add_argument("--channels-last", choices=CHANNELS_LAST_CHOICES, default="depthwise",
                        help="which shapes to measure channels last too (default depthwise: about 3 s a shape in "
                             "float32 on an H200; all: tens of minutes); the others take their contiguous twin's "
                             "workspace")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("colo gpus --profile: no CUDA GPU here (torch.cuda.is_available() is False): a profile is measured "
              "on the GPU it is for", file=sys.stderr)
        return 2
    if not 0 <= args.gpu < torch.cuda.device_count():
        print(f"colo gpus --profile: no GPU {args.gpu} (this machine has {torch.cuda.device_count()})",
              file=sys.stderr)
        return 2
    from colo import _core

    started = time.time()
    try:
        profile = measure(args.gpu, args.quick, progress=lambda line: print(line, flush=True),
                          max_batch=args.max_batch, half=args.half, channels_last=args.channels_last)
    except (RuntimeError, subprocess.CalledProcessError, FileNotFoundError) as exc:
        print(f"colo gpus --profile: {exc}".replace("\n", " "), file=sys.stderr)
        return 1
    key = _core.profile_key(profile["gpu"])
    path = _core.store_device_profile(json.dumps(profile), key)
    print(f"{profile['name']}: context {profile['context_bytes'] >> 20} MiB, library workspaces "
          f"{profile['library_workspace_bytes'] >> 20} MiB (cuBLAS {profile['cublas_workspace_bytes'] >> 20} MiB a "
          f"handle), {len(profile['conv_workspace']['shapes'])} convolution shapes"
          f"{' in float32 and bf16' if 'conv_workspace_half' in profile else ''}, in "
          f"{time.time() - started:.0f} s; stored as '{key}' in {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
