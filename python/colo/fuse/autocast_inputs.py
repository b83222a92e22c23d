"""One autocast cast per activation that several Linears read.

Under autocast every Linear casts a float32 input to the lower precision
itself, so an activation that three projections read (a transformer's q, k
and v, and LoRA adapters beside them) is cast three or more times a step,
and each cast has its own backward. In the fused graph such an activation is
cast once, and the Linears (shared frozen, fused, or plain) read that copy.

A dropout whose every reader is such a Linear reads the copy too, when it
has one rate for all models: it then masks the lower-precision values.
Autocast would have rounded its output anyway; the difference is where one
rounding falls (round(round(x) * m / (1 - p)) against round(x * m / (1 - p))).
The activation's gradient from those readers is then summed in the lower
precision before its one cast back. Outside autocast the cast is the
identity, and the graph computes exactly what it did."""
import torch

from colo.fuse import frozen, layers


def autocast_input(x):
    """`x` cast to autocast's lower precision where autocast is on for its
    device and `x` is float32; otherwise `x` itself."""
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
        return x
    dtype = frozen.autocast_dtype(x.device.type)
    return x if dtype is None else x.to(dtype)


_LINEARS = (torch.nn.Linear, layers.FusedLinear, frozen.PaddedLinear)


def _reads_first(user, node):
    return user.op == "call_module" and bool(user.args) and user.args[0] is node and \
        all(a is not node for a in list(user.args[1:]) + list(user.kwargs.values()))


def _is_linear_reader(user, node, modules):
    return _reads_first(user, node) and isinstance(modules.get(user.target), _LINEARS)


def _is_dropout_before_linears(user, node, modules):
    if not _reads_first(user, node):
        return False
    module = modules.get(user.target)
    if isinstance(module, layers.FusedDropout):
        if not module.same_rate or module.channelwise:
            return False
    elif type(module) is not torch.nn.Dropout:
        return False
    return bool(user.users) and all(_is_linear_reader(reader, user, modules) for reader in user.users)


def share_autocast_casts(graph_module):
    """Rewrites `graph_module` (a fused module) so that each activation read
    by two or more Linears, directly or through a dropout (see above), is
    cast once under autocast. Returns how many activations it now casts once."""
    modules = dict(graph_module.named_modules())
    graph = graph_module.graph
    shared = 0
    for node in list(graph.nodes):
        readers = [u for u in node.users
                   if _is_linear_reader(u, node, modules) or _is_dropout_before_linears(u, node, modules)]
        if len(readers) < 2:
            continue
        with graph.inserting_after(node):
            low = graph.call_function(autocast_input, (node,))
        for reader in readers:
            reader.replace_input_with(node, low)
        shared += 1
    if shared:
        graph_module.recompile()
    return shared

