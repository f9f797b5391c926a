"""Power-of-two fixed point: the quantised model the circuit proves.

A tensor at scale s holds integers v standing for v / 2^s. The input is quantised as
round(x · 2^input_scale) and must fit ``input_bits`` signed bits. A Linear or Conv2d layer
gets its own weight scale s_w (the largest with every |round(w · 2^s_w)| < 2^(weight_bits-1)),
its bias is round(b · 2^(s_x + s_w)), and its accumulator (scale s_x + s_w) is rescaled to
``act_scale`` by q = floor((acc + 2^(k-1)) / 2^k), k = s_x + s_w - act_scale, then ReLU'd when
a ReLU follows (fused). A ReLU elsewhere keeps its input's scale; AvgPool2d sums its
window (its 1/k² = 2^-m raises the scale by m, and the next rescale divides it out);
MaxPool2d and reshapes keep the scale; a residual add brings both sides to the larger scale
(a left shift, exact); a constant added to an activation (``addconst``) is round(c · 2^s) at the
activation's scale s (a constant folded into a Linear's or Conv2d's bias is quantised with the
bias, at the accumulator's scale).

``calibrate(model, data)`` picks input_scale and act_scale from the data's ranges and
reports how often the quantised model (``reference.run``) agrees with float inference.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from .frontend import Layer, consumers, export, to_layers


@dataclass
class Options:
    input_scale: int = 4
    input_bits: int = 8
    act_scale: int = 8
    weight_bits: int = 8
    input_visibility: str = "public"   # public | private
    weights: str = "fixed"             # fixed | private

    def check(self) -> None:
        if self.input_visibility not in ("public", "private"):
            raise ValueError(f"input_visibility must be 'public' or 'private', not {self.input_visibility!r}")
        if self.weights not in ("fixed", "private"):
            raise ValueError(f"weights must be 'fixed' or 'private', not {self.weights!r}")
        for name in ("input_bits", "weight_bits"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 2 <= v <= 32:
                raise ValueError(f"{name} must be an integer in [2, 32], got {v!r}")
        for name in ("input_scale", "act_scale"):
            v = getattr(self, name)
            if not isinstance(v, int) or not -16 <= v <= 40:
                raise ValueError(f"{name} must be an integer exponent in [-16, 40], got {v!r}")


@dataclass
class QModel:
    layers: list[Layer]
    options: Options
    scales: list[int] = field(default_factory=list)    # output scale of every layer
    fused: set = field(default_factory=set)            # linear/conv layers whose ReLU is fused in
    input_shape: tuple = ()

    @property
    def output_scale(self) -> int:
        return self.scales[-1]


def weight_scale(w: torch.Tensor, bits: int) -> int:
    m = float(w.abs().max()) if w.numel() else 0.0
    if m == 0.0:
        return 0
    s = math.floor(math.log2(((1 << (bits - 1)) - 1) / m))
    while round(m * 2.0 ** s) > (1 << (bits - 1)) - 1:
        s -= 1
    return s


def quantise(layers: list[Layer], options: Options) -> QModel:
    options.check()
    q = QModel(layers, options, input_shape=layers[0].shape)
    users = consumers(layers)
    for i, L in enumerate(layers):
        if L.op == "input":
            s = options.input_scale
        elif L.op in ("linear", "conv"):
            sx = q.scales[L.inputs[0]]
            sw = weight_scale(L.attrs["weight"], options.weight_bits)
            w = torch.round(L.attrs["weight"].double() * 2.0 ** sw).to(torch.int64)
            b = L.attrs["bias"]
            bq = torch.zeros(w.shape[0], dtype=torch.int64) if b is None else \
                torch.round(b.double() * 2.0 ** (sx + sw)).to(torch.int64)
            L.attrs.update(w_int=w, b_int=bq, s_w=sw, k=sx + sw - options.act_scale)
            if len(users[i]) == 1 and layers[users[i][0]].op == "relu":
                q.fused.add(i)
            s = options.act_scale
        elif L.op == "avgpool":
            s = q.scales[L.inputs[0]] + L.attrs["shift"]
        elif L.op == "add":
            s = max(q.scales[j] for j in L.inputs)
        elif L.op == "addconst":
            s = q.scales[L.inputs[0]]
            L.attrs["c_int"] = torch.round(L.attrs["const"].double() * 2.0 ** s).to(torch.int64)
        elif L.op == "argmax":
            s = 0
        else:
            s = q.scales[L.inputs[0]]
        q.scales.append(s)
    return q


def quantise_input(x, options: Options, shape: tuple) -> torch.Tensor:
    """Float (or integer) input of shape ``shape`` or (B, *shape) -> int64 (B, *shape), checked."""
    if not isinstance(x, torch.Tensor):
        try:
            x = torch.as_tensor(x)
        except (TypeError, ValueError, RuntimeError) as e:
            raise TypeError(f"the input must be a tensor of numbers ({e})") from None
    if x.dtype == torch.bool or x.is_complex() or not (x.is_floating_point() or x.dtype in
                                                        (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64)):
        raise TypeError(f"the input must be a real float or integer tensor, got {x.dtype}")
    if tuple(x.shape) == tuple(shape):
        x = x.unsqueeze(0)
    if tuple(x.shape[1:]) != tuple(shape):
        raise ValueError(f"the input has shape {list(x.shape)}, the circuit takes {list(shape)} "
                         f"(or a batch of them: [B, {', '.join(map(str, shape))}])")
    xd = x.double()
    if not bool(torch.isfinite(xd).all()):
        raise ValueError("the input holds NaN or infinite values")
    v = torch.round(xd * 2.0 ** options.input_scale)
    lo, hi = -(1 << (options.input_bits - 1)), (1 << (options.input_bits - 1)) - 1
    bad = (v < lo) | (v > hi)
    if bool(bad.any()):
        j = tuple(int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(f"input value {float(xd[j])} at index {list(j)} is out of range: at scale 2^"
                         f"{options.input_scale} with {options.input_bits} signed bits the input must lie in "
                         f"[{lo / 2 ** options.input_scale}, {hi / 2 ** options.input_scale}]")
    return v.to(torch.int64)


@dataclass
class Calibration:
    options: dict           # input_scale, act_scale (and the bit widths), for compile(**options)
    agreement: float        # fraction of samples whose argmax matches float inference
    max_error: float        # largest |quantised - float| output over the data
    float_outputs: torch.Tensor
    quantised_outputs: torch.Tensor

    def __str__(self) -> str:
        return (f"calibrated {self.options}: argmax agrees with float inference on {100 * self.agreement:.1f}% "
                f"of the data, largest output error {self.max_error:.4g}")


def calibrate(model, data: torch.Tensor, *, input_bits: int = 8, act_bits: int = 16, weight_bits: int = 8,
              example_input: torch.Tensor | None = None) -> Calibration:
    """Pick input_scale (the largest whose quantised data fits input_bits) and act_scale (the largest
    keeping every float activation of the data below 2^(act_bits-1) at that scale), then measure
    the quantised model against float inference on ``data`` (a batch)."""
    from . import reference
    data = torch.as_tensor(data).float()
    ex = data[:1] if example_input is None else example_input
    layers = to_layers(export(model, ex))
    m = float(data.abs().max())
    s_in = 16 if m == 0 else math.floor(math.log2(((1 << (input_bits - 1)) - 1) / m))
    while s_in > -16 and float(torch.round(data.double().abs().max() * 2.0 ** s_in)) > (1 << (input_bits - 1)) - 1:
        s_in -= 1
    act_max = 0.0
    with torch.no_grad():
        for t in reference.float_activations(layers, data):
            act_max = max(act_max, float(t.abs().max()) if t.numel() else 0.0)
    s_a = 8 if act_max == 0 else math.floor(math.log2(((1 << (act_bits - 1)) - 1) / act_max))
    opts = dict(input_scale=int(s_in), input_bits=input_bits, act_scale=int(s_a), weight_bits=weight_bits)
    qm = quantise(layers, Options(**opts))
    with torch.no_grad():
        fo = model(data) if isinstance(model, torch.nn.Module) else model.module()(data)
    qi = reference.run(qm, quantise_input(data, qm.options, qm.input_shape))
    qo = qi.double() / 2.0 ** qm.output_scale
    fo = fo.double().reshape(qo.shape)
    agree = float((qo.argmax(-1) == fo.argmax(-1)).double().mean()) if qo.dim() > 1 else 1.0
    return Calibration(opts, agree, float((qo - fo).abs().max()), fo, qo)
