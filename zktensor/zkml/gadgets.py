"""The constraint gadgets, each with its batched integer witness.

Every gadget takes LC tensors (flattened to ``(N,)`` elements) with their integer bounds
``lo <= value <= hi`` (int64 tensors), emits constraints into a ``System``, and returns its
output LC, the output's bounds and a witness function ``fn(W, *values) -> value`` that
fills its wires in W ((B, n_wires) int64, one row per input of the batch) from the input
values ((B, N) int64) with whole-tensor torch operations.

Signed integers live in the field as p - |x|. A value v with -2^(b-1) <= v < 2^(b-1) is
range-checked by the b bits of v + 2^(b-1) (offset binary): b booleanity constraints
bit·(bit - 1) = 0 and one linear constraint tying the bits to v. The top bit of the offset
binary form is the sign: 1 exactly when v >= 0.

Rescale (``rescale``): from an accumulator y with |y| bounded, q = floor((y + h) / 2^k) with
h = 2^(k-1) (round half up; h = 0 for k = 0), as

    y + h = 2^k · q + r,   r = Σ 2^j r_j (k bits),   q = Σ 2^i q_i − 2^(b-1) (b bits).

Both sides are integers in [-2^(k+b-1), 2^(k+b-1)), an interval shorter than p (k + b <= 62),
so the equation mod p has exactly one solution in bits: the honest q and r. b is the
smallest width whose range holds every q the bounds allow, so an honest witness always
exists, and a prover cannot choose another. ReLU is fused: relu(q) = q_(b-1) · Σ_(i<b-1)
2^i q_i (one constraint: the sign bit times the magnitude bits), since q >= 0 exactly when
q_(b-1) = 1 and then q = Σ_(i<b-1) 2^i q_i.

Max (``maximum``): d = a - b range-checked, s its sign bit, t = s·d (one constraint),
max = b + t.
"""
from __future__ import annotations

import torch

from .lc import INT_LIMIT, LC, System


class BoundError(ValueError):
    """A model whose values could leave the exact range (wrap around p): refused at compile time."""


def bits_for(lo: int, hi: int) -> int:
    """Smallest b >= 1 with -2^(b-1) <= lo and hi < 2^(b-1)."""
    b = 1
    while lo < -(1 << (b - 1)) or hi >= (1 << (b - 1)):
        b += 1
    return b


def check_limit(bound: int, where: str) -> None:
    if bound >= INT_LIMIT:
        raise BoundError(f"{where}: values could reach 2^{bound.bit_length() - 1}, beyond 2^62 (the "
                         "exact int64 range, far below p/2, that keeps every value from wrapping "
                         "modulo p); lower the scales or the bit widths")


def to_bits(v: torch.Tensor, b: int) -> torch.Tensor:
    """(..., ) int64 in [0, 2^b) -> (..., b) bits, least significant first."""
    return (v.unsqueeze(-1) >> torch.arange(b, dtype=torch.int64)) & 1


def _pow2(b: int, start: int = 0) -> torch.Tensor:
    return torch.tensor([1 << (start + i) for i in range(b)], dtype=torch.int64)


def _bits_lc(bits: torch.Tensor, start: int = 0, upto: int | None = None) -> LC:
    """Σ_i 2^(start+i) bit_i over the last axis of a (N, b) wire-id tensor."""
    ids = bits if upto is None else bits[:, :upto]
    b = ids.shape[1]
    return LC(ids, _pow2(b, start).expand(ids.shape[0], b).clone())


def booleanity(sys: System, name: str, bits: torch.Tensor) -> None:
    flat = bits.reshape(-1)
    x = LC.wires(flat)
    sys.add(name, x, _minus_one(x))


def _minus_one(x: LC) -> LC:
    n = x.shape[0]
    return x + LC(torch.zeros(n, 1, dtype=torch.int64), torch.full((n, 1), -1, dtype=torch.int64))


def _const(n: int, c: int) -> LC:
    return LC(torch.zeros(n, 1, dtype=torch.int64), torch.full((n, 1), c, dtype=torch.int64))


def _check_range(v: torch.Tensor, lo: int, hi: int, where: str) -> None:
    if v.numel() and (int(v.min()) < lo or int(v.max()) > hi):
        raise RuntimeError(f"{where}: a value left its proven bounds [{lo}, {hi}] (a bug in the "
                           "bound analysis: no witness is written)")


def range_check(sys: System, name: str, x: LC, b: int):
    """Constrain each element of x to [-2^(b-1), 2^(b-1)): b bits + one linear constraint each."""
    N = x.shape[0]
    bits = sys.wires((N, b), f"{name}: range bits")
    booleanity(sys, f"{name}: range bits", bits)
    sys.add(f"{name}: range equation", _bits_lc(bits) - x + _const(N, -(1 << (b - 1))))

    def fn(W: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        _check_range(v, -(1 << (b - 1)), (1 << (b - 1)) - 1, name)
        W[:, bits.reshape(-1)] = to_bits(v + (1 << (b - 1)), b).reshape(v.shape[0], -1)
        return v
    return fn


def rescale(sys: System, name: str, y: LC, lo: torch.Tensor, hi: torch.Tensor, k: int, relu: bool):
    """q = floor((y + 2^(k-1)) / 2^k) (k >= 0), then relu(q) when asked; see the module doc.
    Returns (out LC of fresh wires, lo, hi, fn, info)."""
    N = y.shape[0]
    h = (1 << (k - 1)) if k > 0 else 0
    ylo, yhi = int(lo.min()), int(hi.max())
    check_limit(max(-ylo, yhi) + h, f"{name}: accumulator")
    qlo = torch.div(lo + h, 1 << k, rounding_mode="floor")
    qhi = torch.div(hi + h, 1 << k, rounding_mode="floor")
    b = bits_for(int(qlo.min()), int(qhi.max()))
    check_limit(1 << (k + b), f"{name}: rescale")
    half = 1 << (b - 1)
    rbits = sys.wires((N, k), f"{name}: remainder bits")
    qbits = sys.wires((N, b), f"{name}: quotient bits")
    out = sys.wires((N,), f"{name}: output")
    booleanity(sys, f"{name}: remainder bits", rbits)
    booleanity(sys, f"{name}: quotient bits", qbits)
    # y + h - 2^k (Σ 2^i q_i - 2^(b-1)) - Σ 2^j r_j = 0
    eq = y + _const(N, h + (half << k)) - _bits_lc(qbits, start=k) - _bits_lc(rbits)
    sys.add(f"{name}: rescale equation y + h = 2^{k}·q + r", eq)
    o = LC.wires(out)
    if relu:
        sys.add(f"{name}: relu (sign bit × magnitude)", LC.wires(qbits[:, b - 1]), _bits_lc(qbits, upto=b - 1), o)
        olo, ohi = qlo.clamp(min=0), qhi.clamp(min=0)
    else:
        sys.add(f"{name}: output = q", _bits_lc(qbits) + _const(N, -half) - o)
        olo, ohi = qlo, qhi

    def fn(W: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        q = torch.div(v + h, 1 << k, rounding_mode="floor")
        r = v + h - (q << k)
        _check_range(q, -half, half - 1, name)
        B = v.shape[0]
        if k:
            W[:, rbits.reshape(-1)] = to_bits(r, k).reshape(B, -1)
        W[:, qbits.reshape(-1)] = to_bits(q + half, b).reshape(B, -1)
        res = q.clamp(min=0) if relu else q
        W[:, out] = res
        return res
    info = dict(k=k, b=b, rbits=rbits, qbits=qbits, out=out)
    return o, olo, ohi, fn, info


def maximum(sys: System, name: str, a: LC, alo, ahi, c: LC, clo, chi):
    """Elementwise max(a, c): the sign bit of d = a - c selects (see the module doc)."""
    N = a.shape[0]
    dlo, dhi = alo - chi, ahi - clo
    m = bits_for(int(dlo.min()), int(dhi.max()))
    check_limit(1 << m, f"{name}: difference")
    half = 1 << (m - 1)
    bits = sys.wires((N, m), f"{name}: difference bits")
    t = sys.wires((N,), f"{name}: selected difference")
    booleanity(sys, f"{name}: difference bits", bits)
    d = a - c
    sys.add(f"{name}: difference equation", d + _const(N, half) - _bits_lc(bits))
    sys.add(f"{name}: sign × difference", LC.wires(bits[:, m - 1]), d, LC.wires(t))
    out = c + LC.wires(t)

    def fn(W: torch.Tensor, va: torch.Tensor, vc: torch.Tensor) -> torch.Tensor:
        dv = va - vc
        _check_range(dv, -half, half - 1, name)
        B = dv.shape[0]
        W[:, bits.reshape(-1)] = to_bits(dv + half, m).reshape(B, -1)
        tv = dv.clamp(min=0)
        W[:, t] = tv
        return vc + tv
    return out, torch.maximum(alo, clo), torch.maximum(ahi, chi), fn


def materialize(sys: System, name: str, x: LC, kind: str = "internal"):
    """Fresh wires equal to x (one linear constraint each): public outputs must be wires."""
    N = x.shape[0]
    w = sys.wires((N,), name, kind)
    sys.add(f"{name}: equals its value", x - LC.wires(w))

    def fn(W: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        W[:, w] = v
        return v
    return LC.wires(w), w, fn


def argmax(sys: System, name: str, x: LC, lo, hi):
    """The index of the first largest of n values (torch.argmax's rule), as one wire.

    One-hot bits e_j (booleanity, Σ e_j = 1), t_j = e_j·x_j (so m = Σ t_j is the chosen value),
    and for every j the range check 0 <= m - x_j - Σ_(k>j) e_k < 2^D: every value is at most m,
    and those before the chosen index strictly less, so the index is unique. The output is
    Σ j·e_j."""
    n = x.shape[0]
    span = int(hi.max()) - int(lo.min()) + 1
    check_limit(span, f"{name}: differences")
    D = max(1, span.bit_length())
    e = sys.wires((n,), f"{name}: one-hot")
    t = sys.wires((n,), f"{name}: selected value")
    dbits = sys.wires((n, D), f"{name}: gap bits")
    out = sys.wires((1,), f"{name}: index")
    booleanity(sys, f"{name}: one-hot", e)
    sys.add(f"{name}: one-hot sums to 1", LC(e.reshape(1, n), torch.ones(1, n, dtype=torch.int64)) + _const(1, -1))
    sys.add(f"{name}: one-hot × value", LC.wires(e), x, LC.wires(t))
    booleanity(sys, f"{name}: gap bits", dbits)
    m = LC(t.reshape(1, n).expand(n, n), torch.ones(n, n, dtype=torch.int64))
    after = LC(e.reshape(1, n).expand(n, n), torch.triu(torch.ones(n, n, dtype=torch.int64), diagonal=1))
    sys.add(f"{name}: gap equation m - x_j - [index > j] = Σ 2^i bit_i", m - x - after - _bits_lc(dbits))
    sys.add(f"{name}: index", LC(e.reshape(1, n), torch.arange(n, dtype=torch.int64).reshape(1, n))
            - LC.wires(out))

    def fn(W: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        B = v.shape[0]
        idx = v.argmax(1)
        onehot = torch.nn.functional.one_hot(idx, n).to(torch.int64)
        W[:, e] = onehot
        W[:, t] = onehot * v
        m = v.max(1, keepdim=True).values
        gap = m - v - (idx.unsqueeze(1) > torch.arange(n)).to(torch.int64)
        _check_range(gap, 0, (1 << D) - 1, name)
        W[:, dbits.reshape(-1)] = to_bits(gap, D).reshape(B, -1)
        W[:, out] = idx.unsqueeze(1)
        return idx
    return LC.wires(out), out, fn
