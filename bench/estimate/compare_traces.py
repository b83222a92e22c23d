"""Where colo's replayed step departs from the GPU's, from the pair of traces
`trace_pair.sh` writes for a row: ROW.json (alloc_trace.py: the real caching
allocator's events) and colo_ROW.trace (COLO_ESTIMATE_TRACE: colo's replay).

    PYTHONPATH=BUILD/python python3 bench/estimate/compare_traces.py DIR/ROW.json [DIR/colo_ROW.trace] \\
        [--shrink-workspace-mib 0.5]

Prints, in MiB:
  - peaks: the GPU's allocated and reserved peaks; colo's allocator model fed
    the GPU's own allocation sequence (after colo's parameters, which the GPU
    allocated before its trace began; a trace of alloc_trace.py --from-start
    holds them itself, and is also fed with the addresses the driver gave its
    segments); colo's replay as it is. When the fed model matches the GPU, the
    model is right and the replay's sequence is what differs;
  - segments: each segment the GPU's allocator cut (the allocation count
    then, its size, what was allocated) beside each growth of colo's reserved
    memory (W: a kernel workspace);
  - with --shrink-workspace-mib: colo's replay with every workspace of 1 MiB
    or more that much smaller, for how much the reserved peak turns on
    workspace sizes (session 20: ResNet-18 2,510 -> 2,632 MiB at 0.5)."""
import argparse
import json

MIB = 1 << 20


def real_events(path, with_addresses=False):
    """The GPU's trace: its JSON, and [(id, bytes)] allocations (bytes 0: a free) in order;
    with_addresses: also {id: address} of the segment each allocation that made one got."""
    trace = json.load(open(path))
    events, ids, made, addresses, segment = [], {}, 0, {}, None
    for action, size, address in trace["events"]:
        if action == "segment_alloc":
            segment = address
        elif action == "alloc":
            made += 1
            ids[address] = made
            events.append((made, size))
            if segment is not None:
                addresses[made] = segment
            segment = None
        elif action == "free_completed" and address in ids:
            events.append((ids.pop(address), 0))
    return (trace, events, addresses) if with_addresses else (trace, events)


def colo_lines(path):
    """colo's trace as (what, phase, kind, op, bytes, allocated, reserved, id) tuples."""
    for line in open(path):
        what, phase, kind, op, size, allocated, reserved, ident = line.split()[:8]
        yield what, phase, kind, op, int(size), int(allocated), int(reserved), int(ident)


def colo_events(path, setup_only=False, shrink=0):
    """colo's replay as [(id, bytes)] (ids offset past the GPU's); its setup allocations only when asked."""
    offset, events = 1 << 40, []
    for what, phase, kind, _op, size, _a, _r, ident in colo_lines(path):
        if setup_only and phase != "setup":
            continue
        if what == "A":
            events.append((offset + ident, max(size - shrink, 512) if kind == "workspace" and size >= MIB else size))
        elif what == "F":
            events.append((offset + ident, 0))
    return events


def segments(trace, colo_path):
    real, count, allocated, live = [], 0, 0, {}
    for action, size, address in trace["events"]:
        if action == "alloc":
            count, live[address] = count + 1, size
            allocated += size
        elif action == "free_completed" and address in live:
            allocated -= live.pop(address)
        elif action == "segment_alloc":
            real.append(f"{count}:{size / MIB:.0f}@{allocated / MIB:.0f}")
    ours, count, before = [], 0, 0
    for what, phase, kind, _op, _size, allocated, reserved, _id in colo_lines(colo_path):
        if what == "A" and phase != "setup":
            count += 1
        if reserved > before and phase != "setup":
            ours.append(f"{count}:{(reserved - before) / MIB:.0f}@{allocated / MIB:.0f}{'W' if kind == 'workspace' else ''}")
        before = max(before, reserved)
    print(f"GPU segments ({len(real)}): {' '.join(real)}")
    print(f"colo's reserved growth ({len(ours)}): {' '.join(ours)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("real")
    parser.add_argument("colo", nargs="?", help="colo's replay of the row (optional for a --from-start trace)")
    parser.add_argument("--shrink-workspace-mib", type=float, default=0)
    args = parser.parse_args()
    from colo import _core

    trace, real, addresses = real_events(args.real, with_addresses=True)
    from_start = trace.get("train_from_event", 0) > 0
    if not from_start and not args.colo:
        parser.error("a trace that began after the model's .cuda() needs colo's replay for the parameters")
    fed_alloc, fed_reserved = _core.allocator_peaks(real if from_start else colo_events(args.colo, setup_only=True) + real)
    line = (f"{trace['row']}: GPU allocated {trace['max_allocated'] / MIB:.0f} reserved {trace['max_reserved'] / MIB:.0f}"
            f" | model fed the GPU's sequence{' from .cuda()' if from_start else ''}: allocated {fed_alloc / MIB:.0f}"
            f" reserved {fed_reserved / MIB:.0f}")
    if from_start:
        _, with_addresses = _core.allocator_peaks(real, segment_addresses=addresses)
        line += f", with the GPU's segment addresses {with_addresses / MIB:.0f}"
    if args.colo:
        alloc, reserved = _core.allocator_peaks(colo_events(args.colo))
        line += f" | colo's replay: allocated {alloc / MIB:.0f} reserved {reserved / MIB:.0f}"
    print(line)
    if args.colo:
        segments(trace, args.colo)
    if args.colo and args.shrink_workspace_mib:
        _, shrunk = _core.allocator_peaks(colo_events(args.colo, shrink=int(args.shrink_workspace_mib * MIB)))
        print(f"colo's replay with workspaces {args.shrink_workspace_mib} MiB smaller: reserved {shrunk / MIB:.0f}")


if __name__ == "__main__":
    main()
