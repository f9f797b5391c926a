"""From a ``torch.nn.Module`` (or a saved ``torch.export`` program) to a small layer graph.

The model is captured by ``torch.export`` and decomposed to core ATen; every node is then
either a constant (parameters, buffers and whatever is computed from them alone, e.g. a
transposed weight, folded by running the op) or one of the layers the circuit knows:

    linear (addmm, mm, linear with constant weights), conv (convolution: stride, padding),
    relu, avgpool, maxpool, reshape (view, flatten), add (two activations: a residual add),
    addconst (an activation plus or minus a constant tensor or number), argmax

BatchNorm in inference form is folded into the Linear or Conv2d in front of it, and so is a
constant added to (or subtracted from) a Linear's or Conv2d's output that nothing else reads
(``x @ W + b``: the constant becomes the layer's bias, quantised at the accumulator's finer
scale; for a Conv2d only a constant per output channel). Anything
else is refused here, with the operator's name and where it sits in the model
(``UnsupportedError``). The graph covers one sample: the example input's leading batch
dimension must be 1 and is dropped.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import torch

aten = torch.ops.aten


class UnsupportedError(ValueError):
    """A model the circuit compiler cannot express (refused before any circuit is made)."""


@dataclass
class Layer:
    op: str                 # input | linear | conv | relu | avgpool | maxpool | reshape | add | addconst | argmax
    inputs: list            # indices of earlier layers
    shape: tuple            # per-sample output shape
    attrs: dict = field(default_factory=dict)
    where: str = ""


def location(node) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if stack:
        path, cls = list(stack.values())[-1]
        path = str(path).replace("L['self'].", "").replace("L['self']", "")
        name = cls.__name__ if isinstance(cls, type) else str(cls).rsplit(".", 1)[-1]
        return f"'{path}' ({name})" if path else f"the forward of {name}"
    trace = (node.meta.get("stack_trace") or "").strip().splitlines()
    return trace[-1].strip() if trace else f"node {node.name}"


def export(model, example_input: torch.Tensor):
    """torch.export, decomposed to core ATen."""
    if isinstance(model, torch.export.ExportedProgram):
        ep = model
    elif isinstance(model, torch.nn.Module):
        model = model.eval()
        with torch.no_grad():
            ep = torch.export.export(model, (example_input,))
    else:
        raise TypeError(f"expected a torch.nn.Module or an ExportedProgram, got {type(model).__name__}")
    return ep.run_decompositions()


_IDENTITY = {aten.clone.default, aten.alias.default, aten.detach.default, aten.contiguous.default,
             aten.lift_fresh_copy.default}
_RESHAPE = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def to_layers(ep) -> list[Layer]:
    """The layer graph of an exported program (see the module doc)."""
    sig = ep.graph_signature
    consts = {}
    for spec in sig.input_specs:
        if spec.kind.name in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            t = ep.state_dict.get(spec.target) if spec.target in ep.state_dict else ep.constants[spec.target]
            consts[spec.arg.name] = t.detach()
    user_inputs = [s.arg.name for s in sig.input_specs if s.kind.name == "USER_INPUT"]
    if len(user_inputs) != 1:
        raise UnsupportedError(f"the model takes {len(user_inputs)} tensor inputs; the circuit takes exactly one")

    layers: list[Layer] = []
    sym: dict[str, int] = {}     # fx node name -> layer index
    origin: dict[int, torch.fx.Node] = {}    # layer index -> the node that made it

    def add(op, ins, shape, where="", **attrs) -> int:
        layers.append(Layer(op, ins, tuple(int(s) for s in shape), attrs, where))
        return len(layers) - 1

    def arg(a):
        if isinstance(a, torch.fx.Node):
            if a.name in sym:
                return ("sym", sym[a.name])
            return consts[a.name]
        if isinstance(a, (list, tuple)):
            return type(a)(arg(x) for x in a)
        return a

    def is_sym(a) -> bool:
        return isinstance(a, tuple) and len(a) == 2 and a[0] == "sym"

    def refuse(node, why: str):
        raise UnsupportedError(f"{why}: {node.target} at {location(node)}")

    def const_arg(node, a, what: str) -> torch.Tensor:
        if is_sym(a):
            refuse(node, f"{what} must be a constant (a weight), not computed from the input")
        return a

    def sole_reader(index: int, node) -> bool:
        """Whether ``node`` is the only reader of layer ``index`` (through identity nodes such
        as clone or a batch norm's getitem): only then may it be folded into that layer."""
        n = origin.get(index)
        while n is not None:
            readers = list(n.users)
            if len(readers) != 1:
                return False
            if readers[0] is node:
                return True
            n = readers[0] if sym.get(readers[0].name) == index else None
        return False

    for node in ep.graph.nodes:
        if node.op == "placeholder":
            if node.name in user_inputs:
                val = node.meta.get("val")
                shape = tuple(val.shape) if val is not None else ()
                if len(shape) < 1 or shape[0] != 1:
                    raise UnsupportedError(f"the example input must have a leading batch dimension of 1, "
                                           f"got shape {list(shape)}")
                sym[node.name] = add("input", [], shape[1:], "input")
            continue
        if node.op == "output":
            outs = node.args[0]
            outs = outs if isinstance(outs, (list, tuple)) else [outs]
            if len(outs) != 1 or not isinstance(outs[0], torch.fx.Node) or outs[0].name not in sym:
                raise UnsupportedError("the model must return one tensor computed from its input")
            out_index = sym[outs[0].name]
            continue
        if node.op != "call_function":
            raise UnsupportedError(f"unsupported graph node {node.op} {node.target} at {location(node)}")
        args = [arg(a) for a in node.args]
        kwargs = {k: arg(v) for k, v in node.kwargs.items()}
        t = node.target
        where = location(node)
        flat = list(args) + list(kwargs.values())
        if not any(is_sym(a) or (isinstance(a, (list, tuple)) and any(is_sym(x) for x in a)) for a in flat):
            consts[node.name] = t(*args, **kwargs)        # constant folding (a weight's transpose, ...)
            continue

        def S(a):
            return layers[a[1]].shape
        made = len(layers)

        if t in _IDENTITY or (t == aten.dropout.default and not args[2]):
            sym[node.name] = args[0][1]
        elif t == operator.getitem:
            src, i = args
            if not is_sym(src) or i != 0:
                refuse(node, "only the first result of a pooling or batch-norm op is supported")
            sym[node.name] = src[1]
        elif t in (aten.addmm.default, aten.mm.default, aten.linear.default):
            if t == aten.addmm.default:
                bias, x, wt = args[0], args[1], args[2]
                if kwargs.get("beta", 1) != 1 or kwargs.get("alpha", 1) != 1:
                    refuse(node, "addmm with alpha/beta other than 1 is unsupported")
                w = const_arg(node, wt, "the weight").T
            elif t == aten.mm.default:
                x, wt = args
                bias, w = None, const_arg(node, wt, "the weight").T
            else:
                x, w = args[0], const_arg(node, args[1], "the weight")
                bias = args[2] if len(args) > 2 else None
            if not is_sym(x) or len(S(x)) != 1 or w.dim() != 2 or w.shape[1] != S(x)[0]:
                refuse(node, f"a matrix product needs a flat activation of {w.shape[1] if w.dim() == 2 else '?'} "
                             f"features times a constant weight (activation shape {list(S(x)) if is_sym(x) else '?'})")
            if bias is not None:
                bias = const_arg(node, bias, "the bias").reshape(-1)
            sym[node.name] = add("linear", [x[1]], (w.shape[0],), where, weight=w.float(),
                                 bias=None if bias is None else bias.float())
        elif t in (aten.convolution.default, aten.conv2d.default):
            if t == aten.convolution.default:
                x, w, bias, stride, padding, dilation, transposed, _, groups = args
            else:
                x, w = args[0], args[1]
                bias = args[2] if len(args) > 2 else None
                stride, padding, dilation, groups = (list(args[3:4]) or [[1, 1]])[0], \
                    (list(args[4:5]) or [[0, 0]])[0], (list(args[5:6]) or [[1, 1]])[0], (list(args[6:7]) or [1])[0]
                transposed = False
            w = const_arg(node, w, "the convolution weight")
            if transposed or groups != 1 or any(d != 1 for d in dilation) or w.dim() != 4:
                refuse(node, "only 2-d convolutions without groups, dilation or transposition are supported")
            C, H, W_ = S(x)
            if w.shape[1] != C:
                refuse(node, f"weight of {w.shape[1]} input channels for an activation of {C}")
            sh, sw = stride
            ph, pw = padding
            OH = (H + 2 * ph - w.shape[2]) // sh + 1
            OW = (W_ + 2 * pw - w.shape[3]) // sw + 1
            if bias is not None:
                bias = const_arg(node, bias, "the bias").reshape(-1).float()
            sym[node.name] = add("conv", [x[1]], (w.shape[0], OH, OW), where, weight=w.float(), bias=bias,
                                 stride=(sh, sw), padding=(ph, pw))
        elif t in (aten._native_batch_norm_legit_no_training.default, aten.batch_norm.default):
            if t == aten.batch_norm.default:
                x, gamma, beta, mean, var, training, _, eps = args[:8]
                if training:
                    refuse(node, "BatchNorm in training mode")
            else:
                x, gamma, beta, mean, var, _, eps = args
            prev = layers[x[1]]
            if prev.op not in ("linear", "conv") or not sole_reader(x[1], node):
                refuse(node, "BatchNorm must follow a Conv2d or Linear whose output nothing else reads")
            inv = 1.0 / torch.sqrt(var.double() + eps)
            g = (gamma.double() if gamma is not None else torch.ones_like(inv)) * inv
            b0 = prev.attrs["bias"].double() if prev.attrs["bias"] is not None else torch.zeros_like(inv)
            shift = beta.double() if beta is not None else torch.zeros_like(inv)
            w = prev.attrs["weight"].double()
            prev.attrs["weight"] = (w * g.reshape(-1, *[1] * (w.dim() - 1))).float()
            prev.attrs["bias"] = ((b0 - mean.double()) * g + shift).float()
            sym[node.name] = x[1]
        elif t in (aten.relu.default, aten.relu_.default):
            sym[node.name] = add("relu", [args[0][1]], S(args[0]), where)
        elif t == aten.avg_pool2d.default:
            x, k = args[0], list(args[1])
            s = list(args[2]) if len(args) > 2 and args[2] else k
            pad = list(args[3]) if len(args) > 3 else [0, 0]
            ceil = args[4] if len(args) > 4 else False
            div = args[6] if len(args) > 6 else kwargs.get("divisor_override")
            k, s, pad = _pair(k), _pair(s), _pair(pad)
            if any(pad) or ceil or div is not None:
                refuse(node, "AvgPool2d with padding, ceil_mode or divisor_override is unsupported")
            area = k[0] * k[1]
            if area & (area - 1):
                refuse(node, f"AvgPool2d over {area} values: the area must be a power of two (its 1/{area} "
                             "is folded into the next rescale)")
            C, H, W_ = S(x)
            sym[node.name] = add("avgpool", [x[1]], (C, (H - k[0]) // s[0] + 1, (W_ - k[1]) // s[1] + 1), where,
                                 kernel=k, stride=s, shift=int(math.log2(area)))
        elif t in (aten.max_pool2d_with_indices.default, aten.max_pool2d.default):
            x, k = args[0], _pair(list(args[1]))
            s = _pair(list(args[2])) if len(args) > 2 and args[2] else k
            pad = _pair(list(args[3])) if len(args) > 3 else (0, 0)
            dil = _pair(list(args[4])) if len(args) > 4 else (1, 1)
            ceil = args[5] if len(args) > 5 else False
            if any(pad) or ceil or dil != (1, 1):
                refuse(node, "MaxPool2d with padding, dilation or ceil_mode is unsupported")
            C, H, W_ = S(x)
            sym[node.name] = add("maxpool", [x[1]], (C, (H - k[0]) // s[0] + 1, (W_ - k[1]) // s[1] + 1), where,
                                 kernel=k, stride=s)
        elif t in _RESHAPE or t == aten.flatten.using_ints:
            x = args[0]
            n = math.prod(S(x))
            if t == aten.flatten.using_ints:
                start = args[1] if len(args) > 1 else 0
                if start != 1:
                    refuse(node, "flatten must keep the batch dimension (start_dim=1)")
                shape = (n,)
            else:
                shape = list(args[1])
                if not shape or shape[0] not in (1, -1):
                    refuse(node, f"a reshape to {shape} changes the batch dimension")
                shape = shape[1:]
                if -1 in shape:
                    known = math.prod(d for d in shape if d != -1)
                    shape = [n // known if d == -1 else d for d in shape]
                if math.prod(shape) != n:
                    refuse(node, f"a reshape of {n} values to {shape}")
            sym[node.name] = add("reshape", [x[1]], tuple(shape), where)
        elif t in (aten.add.Tensor, aten.sub.Tensor):
            a, b = args[0], args[1]
            alpha = kwargs.get("alpha", args[2] if len(args) > 2 else 1)
            sub = t == aten.sub.Tensor
            if is_sym(a) and is_sym(b):
                if alpha != 1 or sub:
                    refuse(node, "between two activations only a plain addition (a residual add) is supported")
                if S(a) != S(b):
                    refuse(node, f"a residual add of shapes {list(S(a))} and {list(S(b))}")
                sym[node.name] = add("add", [a[1], b[1]], S(a), where)
            elif not is_sym(a) and sub:
                refuse(node, "a constant minus an activation is unsupported (it negates the activation)")
            else:
                if not is_sym(a):
                    if alpha != 1:
                        refuse(node, "a constant plus alpha times an activation is unsupported")
                    a, b = b, a
                sym[node.name] = _add_constant(layers, a[1], b, (-1 if sub else 1) * alpha, node, where,
                                               sole_reader(a[1], node), refuse, add)
        elif t == aten.argmax.default:
            x = args[0]
            dim = args[1] if len(args) > 1 else kwargs.get("dim")
            keep = args[2] if len(args) > 2 else kwargs.get("keepdim", False)
            if not is_sym(x) or len(S(x)) != 1 or dim not in (None, 1, -1):
                refuse(node, "argmax is supported over a flat vector of logits (dim=1)")
            sym[node.name] = add("argmax", [x[1]], (1,) if keep else (), where)
        else:
            refuse(node, "unsupported operator")
        if len(layers) > made:
            origin[len(layers) - 1] = node
    # keep the layers the output needs
    return layers[:out_index + 1]


def _add_constant(layers, index: int, c, sign, node, where: str, foldable: bool, refuse, add) -> int:
    """An activation (layer ``index``) plus sign·c, c a constant tensor or number: folded into the
    bias of the Linear or Conv2d that made the activation when nothing else reads it (and, for a
    Conv2d, c is one value per output channel), else an ``addconst`` layer."""
    L = layers[index]
    if isinstance(c, bool) or not isinstance(c, (int, float, torch.Tensor)) or \
            (isinstance(sign, bool) or not isinstance(sign, (int, float))):
        refuse(node, "an addition of something other than an activation and a constant")
    c = torch.as_tensor(c, dtype=torch.float64) * float(sign)
    if c.is_complex() or not bool(torch.isfinite(c).all()):
        refuse(node, "an added constant must be real and finite")
    full = (1, *L.shape)
    try:
        ok = tuple(torch.broadcast_shapes(full, tuple(c.shape))) == full
    except RuntimeError:
        ok = False
    if not ok:
        refuse(node, f"a constant of shape {list(c.shape)} added to an activation of shape {list(L.shape)} "
                     "(it must broadcast to the activation without changing its shape)")
    c = c.expand(full)[0].clone()
    per_channel = c.reshape(c.shape[0], -1) if c.dim() else c
    if foldable and L.op == "linear":
        delta = c
    elif foldable and L.op == "conv" and bool((per_channel == per_channel[:, :1]).all()):
        delta = per_channel[:, 0]
    else:
        return add("addconst", [index], L.shape, where, const=c.float())
    b0 = L.attrs["bias"].double() if L.attrs["bias"] is not None else torch.zeros(L.shape[0], dtype=torch.float64)
    L.attrs["bias"] = (b0 + delta).float()
    return index


def _pair(v) -> tuple:
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return (int(v[0]), int(v[-1])) if v else (1, 1)


def consumers(layers: list[Layer]) -> list[list[int]]:
    out = [[] for _ in layers]
    for i, L in enumerate(layers):
        for j in L.inputs:
            out[j].append(i)
    return out
