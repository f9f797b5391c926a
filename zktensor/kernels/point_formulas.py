"""The complete point formulas the kernels run, over flat XYZZ data (L, K, m).

The `ec` programs (`f_add`, `f_double`, ...) are traced once per group and compiled by the
pass pipeline (`msm_ec`); the functions over flat data add what a straight-line kernel
cannot: `fix_sum` finds the exceptional cases of the incomplete addition formula (an
identity operand, P = Q, P = -Q) from the cross-multiplied differences the kernel also
returns, and patches those rows with the doubling kernel or the identity. `G` is a group
space (`points.GroupSpace`); `points.PointTensor` is the user-facing type built on these.
"""
from __future__ import annotations

import numpy as np
import torch

from ..algebra.towers import tower
from ..ir import ec as E
from . import msm_ec, msm_triton
from .host_words import xyzz_to_affine
from .msm_inverse import batch_inverse

# -- the traced formulas (each compiled once per group) -------------------------------


def f_add(P, Q):
    h, r = P.cross(Q)
    return P + Q, h, r


def f_double(P):
    return P.double()


def f_neg(P):
    return -P


def f_cross(P, Q):
    return P.cross(Q)


def f_norm(G):
    """The norm of ZZZ (itself over Fq): what to invert for the affine form."""
    b = beta(G)

    def f(P):
        parts = P.coords()[3].parts()
        if len(parts) == 1:
            return parts[0]
        a0, a1 = parts
        return a0 * a0 - (a1 * a1) * b
    return f


def f_affine(P, inv_norm):
    X, Y, ZZ, ZZZ = P.coords()
    parts = ZZZ.parts()
    if len(parts) == 1:
        zinv = E.join(inv_norm)
    else:               # 1/z = conj(z) / norm(z)
        zinv = E.join(parts[0] * inv_norm, -(parts[1] * inv_norm))
    t = ZZ * zinv       # = 1/Z (ZZ^3 = ZZZ^2)
    return E.make("affine", X * t.square(), Y * zinv)


def f_curve(G):
    """y^2 - (x^3 + a x + b) of an affine point: zero exactly on the curve."""
    def f(P):
        x, y = P.coords()
        rhs = x * x * x + G.b
        if G.a not in (0, (0, 0)):
            rhs = rhs + x * G.a
        return y * y - rhs
    return f


def beta(G) -> int:
    if G.degree == 1:
        return 1
    return tower(G.tower).beta


# -- helpers over flat data (L, K, m) ------------------------------------------------------


def comps(data: torch.Tensor) -> list[torch.Tensor]:
    """The K component views (L, *batch) of point data (L, K, *batch)."""
    return [data[:, k] for k in range(data.shape[1])]


def is_zero(data: torch.Tensor) -> torch.Tensor:
    """Rows (last batch dims) where every word of (L, C, *batch) data is zero."""
    if data.device.type == "cpu":       # numpy's OR over the words: a quarter of torch's time
        return torch.from_numpy(np.asarray(np.bitwise_or.reduce(data.numpy(), axis=(0, 1)) == 0))
    return torch.all(data.reshape(data.shape[0] * data.shape[1], *data.shape[2:]) == 0, dim=0)


def all_equal_or(data: torch.Tensor, col: torch.Tensor, skip: torch.Tensor) -> bool:
    """Whether every column m of data (L, C, m) equals col (L, C, 1), where skip[m] is False."""
    if data.device.type == "cpu":       # numpy, word row by word row:
        x, c = data.numpy(), col.numpy()        # one (m,) accumulator for all word rows, no (L, C, m) comparison tensor
        diff = np.zeros(x.shape[2], dtype=x.dtype)
        for i in range(x.shape[0]):
            for k in range(x.shape[1]):
                diff |= x[i, k] ^ c[i, k]
        return bool(((diff == 0) | skip.numpy()).all())
    return bool(torch.all((data == col) | skip.reshape(1, 1, -1)))


def stack_outs(outs, start: int, count: int) -> torch.Tensor:
    return torch.stack(outs[start:start + count], dim=1)


def is_id(G, flat: torch.Tensor) -> torch.Tensor:
    d = G.degree
    return is_zero(flat[:, 2 * d:3 * d])


def cross(G, A, B):
    h_r = msm_ec.run(G.params, "cross", ("xyzz", "xyzz"), f_cross, comps(A) + comps(B))
    d = G.degree
    return torch.stack(h_r[:d], dim=1), torch.stack(h_r[d:], dim=1)


def max_chain(G) -> int:
    """Longest run of doublings fused into one kernel: launches against compile time (a
    G1 doubling is ~9 products, a G2 one ~24; MNT4-753's products are 9x BN254's; a chain
    of 16 BN254 G1 doublings took minutes to compile for the fp64 vector target)."""
    if G.degree == 2:
        return 2
    return 4 if G.F.bits <= 384 else 1


def f_double_chain(k):
    def f(P):
        for _ in range(k):
            P = P.double()
        return P
    return f


def double_n(G, flat: torch.Tensor, n: int) -> torch.Tensor:
    """2^n·P for flat XYZZ data: runs of 2^j doublings fused into one kernel each (at most
    `max_chain(G)`), so a Horner step of c doublings is a launch or two, from at most
    log2(max_chain) + 1 distinct kernels."""
    if flat.shape[2] == 0:
        return flat
    cap = max_chain(G)
    while n > 0:
        k = min(cap, 1 << (n.bit_length() - 1))
        if k == 1:
            outs = msm_ec.run(G.params, "double", ("xyzz",), f_double, comps(flat))
        else:
            outs = msm_ec.run(G.params, ("double", k), ("xyzz",), f_double_chain(k), comps(flat))
        flat = torch.stack(outs, dim=1)
        n -= k
    return flat


def set_identity(G, flat: torch.Tensor, mask: torch.Tensor) -> None:
    """Write the identity into the rows of flat data selected by mask (in place)."""
    if bool(mask.any()):
        flat[:, :, mask] = G.identity((1,), device=flat.device).data


def fix_sum(G, S, h, r, A, B, idA=None, idB=None) -> torch.Tensor:
    """Patch S = A + B from the incomplete formula: identity operands, A = B, A = -B."""
    idA = is_id(G, A) if idA is None else idA
    idB = is_id(G, B) if idB is None else idB
    exc = is_zero(h) & ~idA & ~idB
    if bool(exc.any()):
        dbl = exc & is_zero(r)
        if bool(dbl.any()):
            S[:, :, dbl] = double_n(G, A[:, :, dbl].contiguous(), 1)
        set_identity(G, S, exc & ~dbl)
    if bool(idA.any()):
        S[:, :, idA] = B[:, :, idA]
    if bool(idB.any()):
        S[:, :, idB] = A[:, :, idB]
    return S


def add_sum(G, A: torch.Tensor, B: torch.Tensor, split: bool | None = None) -> list:
    """The outputs of `f_add` over flat XYZZ data: the K components of the incomplete sum,
    then h and r. `split`: in two kernels (msm_triton.add_split); by default where the
    Triton target would spill the fused one."""
    if split is None:
        split = msm_triton.split_here(G, G.triton_split_add, A.device.type)
    if split:
        return msm_triton.add_split(G.params, comps(A) + comps(B))
    return msm_ec.run(G.params, "add", ("xyzz", "xyzz"), f_add, comps(A) + comps(B))


def add_complete(G, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """A + B for flat XYZZ data (L, K, m), every case included."""
    if A.shape[2] == 0:
        return A.clone()
    outs = add_sum(G, A, B)
    K, d = G.K, G.degree
    S = torch.stack(outs[:K], dim=1)
    h = torch.stack(outs[K:K + d], dim=1)
    r = torch.stack(outs[K + d:], dim=1)
    return fix_sum(G, S, h, r, A, B)



def tree_sum(G, t: torch.Tensor, rows: int, K: int) -> torch.Tensor:
    """sum_k t[:, :, k·rows:(k+1)·rows] of flat XYZZ data by a tree of complete additions
    (log2 K launches)."""
    s, k = t, K
    while k > 1:
        half = k // 2
        top = add_complete(G, s[:, :, :half * rows], s[:, :, half * rows:2 * half * rows])
        s = torch.cat([top, s[:, :, 2 * half * rows:k * rows]], dim=2) if k % 2 else top
        k = half + (k % 2)
    return s


def affine(G, flat: torch.Tensor):
    """(xy, inf) of flat XYZZ data (L, K, m): Montgomery affine coordinates (L, 2·degree, m)
    (zero at the identity) and the identity mask (m,)."""
    m = flat.shape[2]
    inf = is_id(G, flat)
    d = G.degree
    device = flat.device
    if not m or bool(inf.all()):
        return torch.zeros((G.L, 2 * d, m), dtype=torch.int32, device=device), inf
    # already affine (ZZ = ZZZ = 1, as G.tensor and from_bytes make them): no inversion
    unit = G.identity((1,), device=device).data * 0
    unit[:, 2 * d] = unit[:, 3 * d] = G._one_col(device).reshape(G.L, 1)
    if all_equal_or(flat[:, 2 * d:], unit[:, 2 * d:], inf):
        xy = flat[:, :2 * d].clone()
    else:
        norm = msm_ec.run(G.params, "norm", ("xyzz",), f_norm(G.params), comps(flat))[0]
        one = G._one_col(device).reshape(G.L, 1).expand(G.L, m)
        norm = torch.where(inf.reshape(1, m), one, norm).contiguous()
        inv = batch_inverse(G.F, norm)
        outs = msm_ec.run(G.params, "to_affine", ("xyzz", "fq"), f_affine, comps(flat) + [inv])
        xy = torch.stack(outs, dim=1)
    xy[:, :, inf] = 0
    return xy, inf


def neg(G, flat: torch.Tensor) -> torch.Tensor:
    """-P for flat XYZZ data (L, K, m)."""
    return torch.stack(msm_ec.run(G.params, "neg", ("xyzz",), f_neg, comps(flat)), dim=1)


# -- a few points on the host ------------------------------------------------------------
#
# A chain of a few points (a Horner chain over the halving's partial sums) is cheaper as
# Python ints (`algebra.curves.lincomb`) than as tensor launches, each of which costs far
# more than its one lane of work on the CPU target. These convert flat XYZZ data to
# affine Python-int points and back with no kernel: the words are read and written by the
# host (Montgomery form with the coordinate field record's R).


def to_host(G, flat: torch.Tensor) -> list:
    """Affine Python-int points (None: the identity) of flat XYZZ data (L, K, m) on the CPU
    (`host_words.xyzz_to_affine`)."""
    words = np.ascontiguousarray(flat.numpy().transpose(1, 2, 0))      # (K, m, L)
    return xyzz_to_affine(G.params, words)


def from_host(G, points: list, device=None) -> torch.Tensor:
    """Flat XYZZ data (L, K, m) of affine Python-int points (None: the identity), ZZ = ZZZ = 1."""
    P, d, L = G.params, G.degree, G.L
    fq = P.fq
    one = [1] + [0] * (d - 1)
    cols = []
    for Q in points:
        if Q is None:                             # G.identity's words: X = Y = 1, ZZ = ZZZ = 0
            comps = one + one + [0] * (2 * d)
        else:
            x, y = ([Q[0]], [Q[1]]) if d == 1 else (list(Q[0]), list(Q[1]))
            comps = x + y + one + one
        cols.append(b"".join(fq.to_mont(c).to_bytes(4 * L, "little") for c in comps))
    words = np.frombuffer(b"".join(cols), dtype="<u4").reshape(len(points), 4 * d, L)
    flat = torch.from_numpy(np.ascontiguousarray(words.transpose(2, 1, 0)).view(np.int32))
    return flat if device is None else flat.to(device)
