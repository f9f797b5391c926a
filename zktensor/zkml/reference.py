"""The oracles: a pure-PyTorch integer model of the quantised network, and float inference
over the same layer graph.

``run`` computes the quantised model's exact integer output with plain int64 tensor
operations written independently of the circuit's witness code: products summed
elementwise instead of matrix products, convolutions and pools as sums over the kernel's
offsets (shift and add), floor division for every rescale. The circuit's output must
equal it exactly.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def _rescale(acc: torch.Tensor, k: int) -> torch.Tensor:
    if k <= 0:
        return acc * (1 << -k)
    return torch.div(acc + (1 << (k - 1)), 1 << k, rounding_mode="floor")


def _windows(x: torch.Tensor, kernel, stride, padding=(0, 0)):
    """The (kh·kw) shifted views of x (B, C, H, W) a kernel's offsets read, each (B, C, OH, OW)."""
    kh, kw = kernel
    sh, sw = stride
    x = F.pad(x, (padding[1], padding[1], padding[0], padding[0]))
    H, W = x.shape[2], x.shape[3]
    OH, OW = (H - kh) // sh + 1, (W - kw) // sw + 1
    for i in range(kh):
        for j in range(kw):
            yield i, j, x[:, :, i:i + sh * (OH - 1) + 1:sh, j:j + sw * (OW - 1) + 1:sw]


def run(qm, x: torch.Tensor) -> torch.Tensor:
    """x: int64 (B, *input_shape) -> the integer output (B, *output_shape)."""
    vals = []
    B = x.shape[0]
    for i, L in enumerate(qm.layers):
        ins = [vals[j] for j in L.inputs]
        if L.op == "input":
            v = x
        elif L.op == "linear":
            w, b = L.attrs["w_int"], L.attrs["b_int"]
            acc = (ins[0][:, None, :] * w[None]).sum(-1) + b
            v = _rescale(acc, L.attrs["k"])
            if i in qm.fused:
                v = v.clamp(min=0)
        elif L.op == "conv":
            w, b = L.attrs["w_int"], L.attrs["b_int"]
            acc = None
            for di, dj, xs in _windows(ins[0], w.shape[2:], L.attrs["stride"], L.attrs["padding"]):
                term = (xs[:, None] * w[None, :, :, di, dj, None, None]).sum(2)
                acc = term if acc is None else acc + term
            v = _rescale(acc + b[None, :, None, None], L.attrs["k"])
            if i in qm.fused:
                v = v.clamp(min=0)
        elif L.op == "relu":
            src = L.inputs[0]
            v = ins[0] if src in qm.fused else ins[0].clamp(min=0)
        elif L.op == "avgpool":
            v = sum(xs for _, _, xs in _windows(ins[0], L.attrs["kernel"], L.attrs["stride"]))
        elif L.op == "maxpool":
            v = None
            for _, _, xs in _windows(ins[0], L.attrs["kernel"], L.attrs["stride"]):
                v = xs if v is None else torch.maximum(v, xs)
        elif L.op == "reshape":
            v = ins[0].reshape(B, *L.shape)
        elif L.op == "add":
            s = qm.scales[i]
            v = sum(t * (1 << (s - qm.scales[j])) for t, j in zip(ins, L.inputs))
        elif L.op == "addconst":
            v = ins[0] + L.attrs["c_int"].unsqueeze(0)
        elif L.op == "argmax":
            v = ins[0].reshape(B, -1).argmax(1).reshape(B, *L.shape)
        else:
            raise ValueError(f"reference: no integer model for {L.op}")
        vals.append(v)
    return vals[-1]


def float_activations(layers, x: torch.Tensor):
    """Float inference over the layer graph: every layer's output, in order."""
    vals = []
    for L in layers:
        ins = [vals[j] for j in L.inputs]
        if L.op == "input":
            v = x.float()
        elif L.op == "linear":
            v = F.linear(ins[0], L.attrs["weight"], L.attrs["bias"])
        elif L.op == "conv":
            v = F.conv2d(ins[0], L.attrs["weight"], L.attrs["bias"], L.attrs["stride"], L.attrs["padding"])
        elif L.op == "relu":
            v = ins[0].clamp(min=0)
        elif L.op == "avgpool":
            v = F.avg_pool2d(ins[0], L.attrs["kernel"], L.attrs["stride"])
        elif L.op == "maxpool":
            v = F.max_pool2d(ins[0], L.attrs["kernel"], L.attrs["stride"])
        elif L.op == "reshape":
            v = ins[0].reshape(ins[0].shape[0], *L.shape)
        elif L.op == "add":
            v = ins[0] + ins[1]
        elif L.op == "addconst":
            v = ins[0] + L.attrs["const"]
        elif L.op == "argmax":
            v = ins[0].argmax(-1)
        else:
            v = ins[0]
        vals.append(v)
        yield v
