"""N copies of one layer as one: their parameters and buffers stacked on a new
leading (model) axis under the single layer's names, and back again."""
import torch


class FuseError(ValueError):
    """The models cannot be fused as given; the message says which layer and why."""


def describe(module):
    """A layer's class and settings, to compare layers of different models."""
    return f"{type(module).__name__}({module.extra_repr()})"


def require_alike(modules, where):
    """Raises FuseError unless every module is the same class with the same settings."""
    first = describe(modules[0])
    for i, other in enumerate(modules[1:], start=1):
        if describe(other) != first:
            raise FuseError(f"colo.fuse: layer '{where}' differs between models: model 0 has {first}, "
                            f"model {i} has {describe(other)}; fused models share one architecture")


def stack_tensors(tensors, where):
    """torch.stack of one tensor per model, with a clear error on a shape mismatch."""
    shapes = {tuple(t.shape) for t in tensors}
    if len(shapes) != 1:
        raise FuseError(f"colo.fuse: '{where}' has different shapes across models: {sorted(shapes)}")
    return torch.stack([t.detach() for t in tensors])


def stack_into(target, modules, where):
    """Registers on `target` every direct parameter and buffer of `modules` (N
    layers alike), stacked, under the same names. A parameter that is None in
    the layers stays None."""
    first = modules[0]
    for name, param in first.named_parameters(recurse=False):
        stacked = stack_tensors([getattr(m, name) for m in modules], f"{where}.{name}")
        target.register_parameter(name, torch.nn.Parameter(stacked, requires_grad=param.requires_grad))
    for name, buf in first.named_buffers(recurse=False):
        target.register_buffer(name, stack_tensors([getattr(m, name) for m in modules], f"{where}.{name}"))
    for name in getattr(first, "_parameters", {}):
        if first._parameters[name] is None and not hasattr(target, name):
            target.register_parameter(name, None)


def per_model_state(fused_state, index, shared=()):
    """Model `index`'s state_dict out of a fused state_dict; names in `shared`
    are one tensor for every model."""
    return {name: value.clone() if name in shared else value[index].clone() for name, value in fused_state.items()}


def check_no_tied_parameters(model):
    """Fusing stacks every layer's parameters separately, which would untie a
    parameter two layers share."""
    seen = {}
    for module_name, module in model.named_modules(remove_duplicate=False):
        for short, param in module.named_parameters(recurse=False):
            name = f"{module_name}.{short}" if module_name else short
            if id(param) in seen and seen[id(param)] != name:
                raise FuseError(f"colo.fuse: '{name}' and '{seen[id(param)]}' are one tied parameter; "
                                "fusing tied parameters is not supported")
            seen.setdefault(id(param), name)
