"""The rewrite at the heart of colo.fuse: trace one model's forward with
torch.fx and build the forward of N models from it, node by node. Every
value gets a layout (colo.fuse.layout); layers become fused layers (layers.py,
attention.py), functions and methods their per-model forms (ops.py), and
conversions between layouts are inserted only where an operation needs one."""
import copy
import inspect

import torch
import torch.fx as fx

from colo.fuse import frozen, layers, ops
from colo.fuse.attention import (MULTI_INPUT_LAYERS, FusedMultiheadAttention, FusedTransformerEncoder,
                                 FusedTransformerEncoderLayer)
from colo.fuse.layout import MODEL_MAJOR, PLAIN, STACKED, convert
from colo.fuse.stacking import FuseError, stack_tensors

# Parameterised layers colo.fuse fuses, by class (subclasses included).
_FUSED_LAYERS = (
    ((torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.ConvTranspose2d), layers.FusedConv),
    ((torch.nn.Linear,), layers.FusedLinear),
    ((torch.nn.BatchNorm1d, torch.nn.BatchNorm2d, torch.nn.BatchNorm3d), layers.FusedBatchNorm),
    ((torch.nn.GroupNorm,), layers.FusedGroupNorm),
    ((torch.nn.LayerNorm,), layers.FusedLayerNorm),
    ((torch.nn.Embedding,), layers.FusedEmbedding),
    ((torch.nn.MultiheadAttention,), FusedMultiheadAttention),
    ((torch.nn.TransformerEncoderLayer,), FusedTransformerEncoderLayer),
    ((torch.nn.TransformerEncoder,), FusedTransformerEncoder),
)
_DROPOUT_LAYERS = {torch.nn.Dropout: False, torch.nn.Dropout2d: True, torch.nn.Dropout3d: True,
                   torch.nn.AlphaDropout: False}
if hasattr(torch.nn, "Dropout1d"):
    _DROPOUT_LAYERS[torch.nn.Dropout1d] = True

SUPPORTED_LAYERS = ("Conv1d, Conv2d, ConvTranspose2d, Linear, BatchNorm1d/2d/3d, GroupNorm, LayerNorm, "
                    "Embedding, MultiheadAttention, TransformerEncoderLayer, TransformerEncoder, Dropout*, "
                    "pooling, activations, Flatten, Softmax")


def _where(node):
    """The traced operation and the line of the model's code it comes from."""
    trace = (node.stack_trace or "").strip().splitlines()
    lines = [line.strip() for line in trace if line.strip().startswith("File")]
    in_forward = [line for line in lines if ", in forward" in line or ", in _" in line]
    line = (in_forward or lines or [""])[0]
    return f"{node.format_node()}" + (f" ({line})" if line else "")


def _fetch(model, path):
    value = model
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _same(a, b):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 (values that do not compare are not the same)
        return False


def _arguments(node, constants):
    """A node's arguments with other nodes by name, a dropout's rate left out,
    and a constant made in the forward as its tensor."""
    if node.op == "get_attr" and node.target in constants:
        return constants[node.target]
    given = (node.args, node.kwargs)
    if node.op == "call_function" and ops.kind_of_function(node.target) == "dropout":
        given = {k: v for k, v in dict(zip(_DROPOUT_ARGS, node.args), **node.kwargs).items() if k != "p"}
    return fx.node.map_arg(given, lambda n: n.name)


def _dropout_rate(node):
    return dict(zip(_DROPOUT_ARGS, node.args), **node.kwargs).get("p", 0.5)


_DROPOUT_ARGS = ("input", "p", "training", "inplace")


def per_model_dropout_rates(traced, constants, others):
    """Compares the forward traced from model 0 (graph, constants) with those of
    the other models (a list of (graph, constants)): every model must run the
    same operations with the same constant arguments, since the fused forward
    is built from model 0's. Only a functional dropout's rate may differ;
    returns {node name: [rate per model]} where it does. Raises FuseError
    naming the first other difference."""
    nodes = list(traced.nodes)
    rates = {node.name: [_dropout_rate(node)] for node in nodes
             if node.op == "call_function" and ops.kind_of_function(node.target) == "dropout"}
    for i, (graph, their_constants) in enumerate(others, start=1):
        theirs = list(graph.nodes)
        for mine, other in zip(nodes, theirs):
            if (mine.op, mine.target, mine.name) != (other.op, other.target, other.name):
                raise FuseError(f"colo.fuse: model {i}'s forward runs other operations than model 0's: "
                                f"{other.format_node()} where model 0 has {_where(mine)}; fused models share one "
                                "architecture")
            if not _same(_arguments(mine, constants), _arguments(other, their_constants)):
                raise FuseError(f"colo.fuse: a value in the forward differs between models 0 and {i} (a Python "
                                f"attribute of the model?): model {i} has {other.format_node()}, model 0 has "
                                f"{_where(mine)}; fused models share one architecture (per-model values belong in "
                                "parameters, buffers or nn.Dropout layers)")
            if mine.name in rates:
                rates[mine.name].append(_dropout_rate(other))
        if len(theirs) != len(nodes):
            raise FuseError(f"colo.fuse: model {i}'s forward runs {len(theirs)} operations, model 0's {len(nodes)}; "
                            "fused models share one architecture")
    return {name: values for name, values in rates.items() if len(set(values)) > 1}


class Rewriter:
    """Builds the fused forward of `models` (N models of one architecture)."""

    def __init__(self, models, own_kernels=True, channels_last=False, constants=None, dropout_rates=None,
                 share_frozen=False):
        self.models = models
        self.n = len(models)
        self.own_kernels = own_kernels
        self.channels_last = channels_last
        self.graph = fx.Graph()
        self.env = {}        # traced node -> node of the fused graph
        self.layout = {}     # traced node -> layout, a tuple of layouts, or ("seq", layout)
        self.root = {}       # qualified name -> fused layer or stacked tensor
        self.converted = {}  # (traced node, layout) -> conversion node, made once
        self.dropouts = 0
        self.shared_state = set()  # names of buffers kept plain (the same in every model)
        self.constants = constants or {}  # tensors the traced forward made from constants, by name
        self.not_state = set()  # tensors the forward reads that are not in the model's state_dict
        self.dropout_rates = dropout_rates or {}  # functional dropouts' rates where they differ, by node name
        # Frozen parameters equal in every model: held once (colo.fuse.frozen).
        self.shared_frozen = frozen.shared_frozen_parameters(models) if share_frozen else set()

    def run(self, traced):
        for node in traced.nodes:
            handler = getattr(self, "_" + node.op)
            handler(node)
        return self.root, self.graph, self.shared_state

    # ---- values and layouts ----

    def _layout_of(self, arg):
        return self.layout.get(arg, PLAIN) if isinstance(arg, fx.Node) else PLAIN

    def _is_fused(self, arg):
        return self._layout_of(arg) in (MODEL_MAJOR, STACKED)

    def _new(self, arg):
        return fx.node.map_arg(arg, lambda n: self.env[n])

    def _as(self, arg, target):
        """The fused graph's value of `arg` in layout `target`."""
        source = self._layout_of(arg)
        if not isinstance(arg, fx.Node) or source == target or not isinstance(source, str):
            return self._new(arg)
        key = (arg, target)
        if key not in self.converted:
            self.converted[key] = self.graph.call_function(convert, (self.env[arg], source, target, self.n))
        return self.converted[key]

    def _set(self, node, new_node, layout):
        self.env[node] = new_node
        self.layout[node] = layout

    def _copy(self, node, layout=PLAIN):
        """The node as it is (all its inputs plain)."""
        self._set(node, self.graph.node_copy(node, lambda n: self.env[n]), layout)

    def _fail(self, node, what):
        raise FuseError(f"colo.fuse: {what}, at {_where(node)}")

    # ---- node kinds ----

    def _placeholder(self, node):
        self._copy(node)

    def _output(self, node):
        def model_major(arg):
            return self._as(arg, MODEL_MAJOR) if self._layout_of(arg) == STACKED else self._new(arg)
        self.graph.output(fx.node.map_arg(node.args[0], model_major))

    def _get_attr(self, node):
        if node.target in self.constants:  # made in the forward, the same for every model
            self.root[node.target] = self.constants[node.target]
            self.not_state.add(node.target)
            return self._copy(node)
        value = _fetch(self.models[0], node.target)
        if not isinstance(value, torch.Tensor):
            self.root[node.target] = value
            self._copy(node)
            return
        if node.target not in self.models[0].state_dict():  # a tensor attribute, not a parameter or buffer
            self.not_state.add(node.target)
        values = [_fetch(m, node.target) for m in self.models]
        if node.target in self.shared_frozen:
            self.root[node.target] = value
            self.shared_state.add(node.target)
            return self._copy(node)
        if not isinstance(value, torch.nn.Parameter) and all(torch.equal(v, value) for v in values[1:]):
            # A constant buffer (a mask, position ids) stays one plain tensor.
            self.root[node.target] = value.clone()
            self.shared_state.add(node.target)
            return self._copy(node)
        stacked = stack_tensors(values, node.target)
        if isinstance(value, torch.nn.Parameter):
            stacked = torch.nn.Parameter(stacked, requires_grad=value.requires_grad)
        self.root[node.target] = stacked
        self._copy(node, MODEL_MAJOR)

    def _call_module(self, node):
        module = self.models[0].get_submodule(node.target)
        if self.shared_frozen and frozen.is_shared_layer(self.models, node.target, self.shared_frozen) \
                and self._shared_layer(node, module):
            return None
        for cls, fused_cls in _FUSED_LAYERS:
            if isinstance(module, cls):
                return self._fused_layer(node, fused_cls)
        if type(module) in _DROPOUT_LAYERS:
            rates = [m.get_submodule(node.target).p for m in self.models]
            return self._dropout_layer(node, node.args[0], rates, _DROPOUT_LAYERS[type(module)], node.target)
        if any(True for _ in module.parameters()):
            self._fail(node, f"layer '{node.target}' ({type(module).__name__}) cannot be fused; "
                             f"colo.fuse fuses {SUPPORTED_LAYERS}")
        kind = ops.kind_of_module(module)
        if kind is None:
            self._fail(node, f"layer '{node.target}' ({type(module).__name__}) is not one colo.fuse knows; "
                             f"it fuses {SUPPORTED_LAYERS}")
        for other in self.models[1:]:
            if repr(other.get_submodule(node.target)) != repr(module):
                self._fail(node, f"layer '{node.target}' differs between models")
        if kind == "dim":
            target, extra = ops.module_as_function(module)
            return self._dim(node, target, extra)
        if kind == "spatial":
            return self._spatial(node, module)
        return self._elementwise(node, module)

    def _call_function(self, node):
        target = node.target
        if target is getattr:
            return self._getattr(node)
        kind = ops.kind_of_function(target)
        if kind is None:
            if any(self._is_fused(a) for a in node.all_input_nodes):
                self._fail(node, f"colo.fuse does not know how '{ops.target_name(target)}' treats the model axis")
            return self._copy(node)
        return getattr(self, "_" + kind)(node, target)

    def _call_method(self, node):
        name = node.target
        if not self._is_fused(node.args[0]):
            if any(self._is_fused(a) for a in node.all_input_nodes):
                self._fail(node, f"method '{name}' of a plain tensor with per-model arguments is not supported")
            return self._copy(node)
        kind = ops.kind_of_method(name)
        if kind is None:
            self._fail(node, f"colo.fuse does not know how tensor method '{name}' treats the model axis")
        if kind == "shape":
            return self._shape(node, name)
        return getattr(self, "_" + kind)(node, name)

    # ---- layers ----

    def _chosen_layout(self, x, takes):
        """The layout a layer taking `takes` gets `x` in: its own if taken, else
        the first taken layout that keeps it per-model (a per-model tensor never
        becomes plain)."""
        layout = self._layout_of(x)
        if layout in takes:
            return layout
        if layout in (MODEL_MAJOR, STACKED):
            return next(t for t in takes if t != PLAIN)
        return takes[0]

    def _fused_layer(self, node, fused_cls):
        if node.target not in self.root:
            modules = [m.get_submodule(node.target) for m in self.models]
            extra = {"own_kernels": self.own_kernels, "channels_last": self.channels_last} \
                if fused_cls is layers.FusedConv else {}
            self.root[node.target] = fused_cls(modules, node.target, **extra)
        fused = self.root[node.target]
        if isinstance(fused, MULTI_INPUT_LAYERS):
            return self._multi_input_layer(node, fused)
        if len(node.args) != 1 or node.kwargs:
            self._fail(node, f"layer '{node.target}' is called with more than one input")
        x = node.args[0]
        chosen = self._chosen_layout(x, fused.takes)
        new = self.graph.call_module(node.target, (self._as(x, chosen), chosen))
        self._set(node, new, fused.gives or chosen)

    def _multi_input_layer(self, node, fused):
        single = self.models[0].get_submodule(node.target)
        bound = inspect.signature(single.forward).bind(*node.args, **node.kwargs)
        kwargs = {}
        for name, arg in bound.arguments.items():
            if name in fused.tensor_args:
                kwargs[name] = self._as(arg, MODEL_MAJOR)
            elif isinstance(arg, fx.Node) and self._is_fused(arg):
                self._fail(node, f"'{name}' of layer '{node.target}' differs per model; colo.fuse needs it the same "
                                 "for every model")
            else:
                kwargs[name] = self._new(arg)
        self._set(node, self.graph.call_module(node.target, (), kwargs), fused.gives)

    def _shared_layer(self, node, module):
        """Runs a shared frozen layer once: as it is on the batch every model
        sees, or over all models' rows at once. False where it cannot run
        shared on its per-model input (the caller fuses it as usual)."""
        inputs = node.all_input_nodes
        if not any(self._is_fused(a) for a in inputs):
            self._adopt(node.target, module)
            self._copy(node)
            return True
        form = frozen.per_model_form(module)
        if form is None or len(node.args) != 1 or node.kwargs:
            return False
        self._adopt(node.target, module)
        if frozen.needs_padding(module):
            self.root[node.target] = frozen.PaddedLinear(self.root[node.target])
        x = self._as(node.args[0], MODEL_MAJOR)
        if form == "folded":
            x = self.graph.call_function(frozen.fold_models, (x,))
        y = self.graph.call_module(node.target, (x,))
        if form == "folded":
            y = self.graph.call_function(frozen.unfold_models, (y, self.n))
        self._set(node, y, MODEL_MAJOR)
        return True

    def _adopt(self, path, module):
        # A copy: the user's model stays untouched (running statistics, its class).
        self.root[path] = frozen.cast_once(copy.deepcopy(module))
        self.shared_state |= frozen.state_names(module, path)

    def _dropout_layer(self, node, x, rates, channelwise, name=None):
        if name is None:
            name = f"colo_dropout_{self.dropouts}"
            self.dropouts += 1
        fused = layers.FusedDropout(rates, channelwise)
        self.root[name] = fused
        if self.shared_frozen and not self._is_fused(x) and fused.same_rate:
            # In the shared frozen part one dropout mask serves every model.
            return self._set(node, self.graph.call_module(name, (self._new(x), PLAIN)), PLAIN)
        chosen = self._chosen_layout(x, fused.takes)
        self._set(node, self.graph.call_module(name, (self._as(x, chosen), chosen)), chosen)

    # ---- functions and methods ----

    def _fused_positions(self, node):
        positions = [i for i, a in enumerate(node.args) if self._is_fused(a)]
        return positions + [k for k, a in node.kwargs.items() if self._is_fused(a)]

    def _emit(self, node, fn, args, kwargs, layout):
        self._set(node, self.graph.call_function(fn, tuple(args), kwargs), layout)

    def _elementwise(self, node, target):
        positions = self._fused_positions(node)
        if not positions:
            return self._copy(node) if not isinstance(target, torch.nn.Module) else \
                self._emit(node, ops.as_function(target), self._new(node.args), self._new(node.kwargs), PLAIN)
        layouts = {self._layout_of(node.args[p] if isinstance(p, int) else node.kwargs[p]) for p in positions}
        layout = STACKED if layouts == {STACKED} else MODEL_MAJOR
        args = [self._as(a, layout) if i in positions else self._new(a) for i, a in enumerate(node.args)]
        kwargs = {k: self._as(a, layout) if k in positions else self._new(a) for k, a in node.kwargs.items()}
        self._emit(node, ops.elementwise_mixed(target, positions, layout, self.n), args, kwargs, layout)

    def _dim(self, node, target, extra=()):
        x = node.args[0]
        if not self._is_fused(x):
            return self._copy(node) if not extra else self._emit(
                node, ops.as_function(target, extra), self._new(node.args), self._new(node.kwargs), PLAIN)
        sequence = ops.returns_sequence(target) or (
            target in ("max", "min") and (len(node.args) > 1 or "dim" in node.kwargs))
        wrap = (lambda layout: ("seq", layout) if sequence else layout)
        if self._layout_of(x) == STACKED and not extra and ops.stacked_dims_kept(target, node.args, node.kwargs):
            return self._copy(node, wrap(STACKED))
        layout = wrap(MODEL_MAJOR)
        args = [self._as(x, MODEL_MAJOR)] + [self._new(a) for a in node.args[1:]]
        self._emit(node, ops.dim_op(target, self.n, extra), args, self._new(node.kwargs), layout)

    def _spatial(self, node, target):
        x = node.args[0]
        module = target if isinstance(target, torch.nn.Module) else None
        if ops.is_max_pool_2x2(target, node.args, node.kwargs, module) and self._relu_of_stacked(x):
            relu_input = x.args[0]
            return self._emit(node, ops.relu_max_pool_2x2(), [self.env[relu_input]], {}, STACKED)
        layout = self._layout_of(x)
        if layout == PLAIN:
            return self._copy(node) if module is None else \
                self._emit(node, ops.as_function(module), self._new(node.args), self._new(node.kwargs), PLAIN)
        args, kwargs = self._new(node.args[1:]), self._new(node.kwargs)
        if layout == STACKED:
            return self._emit(node, ops.as_function(target), [self.env[x], *args], kwargs, STACKED)
        self._emit(node, ops.spatial(target, self.n), [self.env[x], *args], kwargs, MODEL_MAJOR)

    def _relu_of_stacked(self, x):
        if not isinstance(x, fx.Node) or len(x.users) != 1 or self._layout_of(x) != STACKED or not x.args:
            return False
        module = self.models[0].get_submodule(x.target) if x.op == "call_module" else None
        inner = x.args[0]
        return (x.op in ("call_module", "call_function", "call_method") and ops.is_relu(x.target, module)
                and isinstance(inner, fx.Node) and self._layout_of(inner) == STACKED
                and len(x.args) == 1 and not x.kwargs.get("inplace", False))

    def _concat(self, node, target):
        tensors = node.args[0]
        if not any(self._is_fused(t) for t in tensors):
            return self._copy(node)
        dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
        if all(self._layout_of(t) == STACKED for t in tensors) and isinstance(dim, int) and dim >= 2:
            return self._copy(node, STACKED)
        kwargs = {k: self._new(v) for k, v in node.kwargs.items() if k != "dim"}
        self._emit(node, ops.concat(target, self.n), [[self._as(t, MODEL_MAJOR) for t in tensors]],
                   dict(kwargs, dim=self._new(dim)), MODEL_MAJOR)

    def _getitem(self, node, target):
        source, index = node.args
        layout = self._layout_of(source)
        if isinstance(index, fx.Node) and self._is_fused(index) or any(
                self._is_fused(a) for a in node.all_input_nodes if a is not source):
            self._fail(node, "indexing with a per-model index is not supported")
        if isinstance(layout, tuple):
            element = layout[1] if layout[0] == "seq" else layout[index]
            return self._copy(node, element)
        if layout == PLAIN:
            return self._copy(node)
        self._emit(node, ops.index_model_major, [self._as(source, MODEL_MAJOR), self._new(index)], {}, MODEL_MAJOR)

    def _getattr(self, node):
        source, name = node.args[0], node.args[1]
        layout = self._layout_of(source)
        if isinstance(layout, tuple):  # .values / .indices of a (values, indices) result
            return self._copy(node, layout[1] if layout[0] == "seq" else MODEL_MAJOR)
        if not self._is_fused(source) or ops.passes_through_getattr(name):
            return self._copy(node)
        if name not in ("shape", "ndim"):
            self._fail(node, f"attribute '{name}' of a per-model tensor is not supported")
        self._emit(node, ops.single_getattr(name, self._layout_of(source), self.n), [self.env[source]], {}, PLAIN)

    def _shape(self, node, name):
        x = node.args[0]
        if name in ("size", "dim", "numel"):
            layout = self._layout_of(x)
            fn = ops.shape_op(name, layout, self.n)
            return self._emit(node, fn, [self.env[x], *self._new(node.args[1:])], self._new(node.kwargs), PLAIN)
        fn = ops.shape_op(name, MODEL_MAJOR, self.n)
        self._emit(node, fn, [self._as(x, MODEL_MAJOR), *self._new(node.args[1:])], self._new(node.kwargs),
                   MODEL_MAJOR)

    def _attention(self, node, target):
        names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal")
        given = dict(zip(names, node.args), **node.kwargs)
        q, k, v = given.pop("query"), given.pop("key"), given.pop("value")
        if not any(self._is_fused(t) for t in (q, k, v)):
            return self._copy(node)
        if any(isinstance(a, fx.Node) and self._is_fused(a) for a in given.values()):
            self._fail(node, "an attention mask or setting that differs per model is not supported")
        qkv = [self._as(t, MODEL_MAJOR) for t in (q, k, v)]
        self._emit(node, ops.attention_over_models, qkv, self._new(given), MODEL_MAJOR)

    def _matmul(self, node, target):
        a, b = node.args[0], node.args[1]
        if not (self._is_fused(a) or self._is_fused(b)):
            return self._copy(node)
        new = [self._as(x, MODEL_MAJOR) if self._is_fused(x) else self._new(x) for x in (a, b)]
        self._emit(node, ops.matmul_of(self._is_fused(a), self._is_fused(b)), new, {}, MODEL_MAJOR)

    def _linear(self, node, target):
        names = ("input", "weight", "bias")
        given = dict(zip(names, node.args), **node.kwargs)
        x, weight, bias = given["input"], given["weight"], given.get("bias")
        if not self._is_fused(weight) and not self._is_fused(bias):
            if not self._is_fused(x):
                return self._copy(node)
            return self._emit(node, torch.nn.functional.linear,
                              [self._as(x, MODEL_MAJOR), self._new(weight), self._new(bias)], {}, MODEL_MAJOR)
        args = [self._as(x, MODEL_MAJOR) if self._is_fused(x) else self._new(x),
                self._as(weight, MODEL_MAJOR), self._as(bias, MODEL_MAJOR) if bias is not None else None]
        self._emit(node, ops.linear_of(self.n), args, {"x_fused": self._is_fused(x)}, MODEL_MAJOR)

    def _pad(self, node, target):
        x = node.args[0]
        if any(self._is_fused(a) for a in node.all_input_nodes if a is not x):
            self._fail(node, "padding with a per-model value is not supported")
        if not self._is_fused(x):
            return self._copy(node)
        layout = self._layout_of(x)
        self._emit(node, ops.pad(layout, self.n), [self.env[x], *self._new(node.args[1:])], self._new(node.kwargs),
                   layout)

    def _dropout(self, node, target):
        x = node.args[0]
        given = dict(zip(("input", "p", "training", "inplace"), node.args), **node.kwargs)
        if given.get("training", True) is False:
            return self._set(node, self._new(x), self._layout_of(x))
        rates = self.dropout_rates.get(node.name, [given.get("p", 0.5)] * self.n)
        self._dropout_layer(node, x, rates, ops.dropout_channelwise(target))

