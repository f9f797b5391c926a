"""Batch inversion as a tree of compiled products (Montgomery's trick, blocked).

For m values a (an Fq limb tensor (L, m), any strides, no zeros) the inverses
come from one field inversion and about 3 products per value:

    up:   blocks of B values -> prefix products p_1..p_{B-1} (p_{B-1} the
          block product), recursively over the block products;
    top:  at most TOP values inverted on the host (`ops.elementwise.invert_few`);
    down: from t = 1/p_{B-1}: 1/a_{B-1} = t·p_{B-2}, t <- t·a_{B-1}, ...

Block i is the values {i, q + i, 2q + i, ...} (q = m / B), so member j of every
block is the contiguous view a[:, j·q:(j+1)·q] (unit strides, which the CPU
target's vector loops need). Each level is one launch of a traced program over
those views, so the whole inversion is 2·log_B(m) launches with no copies
when m is a multiple of B (else one padded copy with ones). `zktensor.ops.elementwise.batch_inverse` does the
same job with O(sqrt m) launches; the MSM's batch-affine levels need the
fewer launches of this tree.
"""
from __future__ import annotations

import torch

from ..ops.elementwise import invert_few, run_program

TOP = 16    # values from which the host inverts: 16 BN254 values take ~60 us there, against
            # ~150 us for the two launches of levels they save and the host's 4 values


def _up(B):
    def f(*a):
        out, acc = [], a[0]
        for x in a[1:]:
            acc = acc * x
            out.append(acc)
        return tuple(out)           # p_1 .. p_{B-1}
    return f


def _down_with_a0(B):
    # inputs: t, a_0..a_{B-1}, p_1..p_{B-2}
    def f(t, *rest):
        a = rest[:B]
        p = (a[0],) + rest[B:]
        inv = [None] * B
        for j in range(B - 1, 0, -1):
            inv[j] = t * p[j - 1]
            t = t * a[j]
        inv[0] = t
        return tuple(inv)
    return f


def batch_inverse(F, a: torch.Tensor, block: int = 8, out: torch.Tensor | None = None) -> torch.Tensor:
    """Inverses of the m values of the limb tensor a (L, m) (none may be zero)."""
    L, m = a.shape
    if out is None:
        out = torch.empty((L, m), dtype=torch.int32, device=a.device)
    if m == 0:
        return out
    if m <= max(block, TOP):
        out.copy_(invert_few(F, a))
        return out
    B = block
    q = -(-m // B)
    if q * B != m:
        pad = F.ones((q * B,), device=a.device).data
        pad[:, :m] = a
        res = batch_inverse(F, pad, block)
        out.copy_(res[:, :m])
        return out
    lean = _lean_programs(F, B, a, out)
    if lean is not None:
        _level_by_address(F, a, out, B, q, *lean)
        return out
    views = [a[:, j * q:(j + 1) * q] for j in range(B)]
    prefixes = run_program(F, ("inv_up", B), B, _up(B), views)
    t = batch_inverse(F, prefixes[-1], block)
    run_program(F, ("inv_down", B), 1 + B + (B - 2), _down_with_a0(B),
                [t] + views + list(prefixes[:-1]), out=[out[:, j * q:(j + 1) * q] for j in range(B)])
    return out


def _lean_programs(F, B, a, out):
    """The compiled up and down programs where a level can be launched by operand addresses
    (`CompiledProgram.run_many`): CPU tensors with unit column strides and one-kernel CPU
    programs; else None. A launch of tensor views cost ~3 us an operand (checks, views,
    outputs allocated), which made the levels of small inversions mostly overhead: the
    bucket reduction's log2 N steps each invert one batch."""
    if a.device.type != "cpu" or a.stride(1) != 1 or out.stride(1) != 1:
        return None
    from ..config import choose, tuned_scope
    from ..ops.elementwise import _program
    from .elementwise import get_program
    with tuned_scope("mul", F.name, a.shape[1], a.device):
        strategy, target = choose("cpu", None, None)
        progs = (get_program(_program(F, ("inv_up", B), B, _up(B)), strategy, target),
                 get_program(_program(F, ("inv_down", B), 1 + B + (B - 2), _down_with_a0(B)), strategy, target))
    if any(c.target != "cpu" or len(c.meta["calls"]) != 1 for c in progs):
        return None
    return progs


def _level_by_address(F, a, out, B, q, up, down):
    """One level of `batch_inverse` (m = q·B values, no padding), launched by addresses."""
    L = a.shape[0]
    pre = torch.empty((B - 1, L, q), dtype=torch.int32)            # p_1 .. p_{B-1}
    col = lambda t, j: (t.data_ptr() + 4 * j * q, t.stride(0))      # noqa: E731  member j's columns
    p = [(pre.data_ptr() + 4 * k * L * q, q) for k in range(B - 1)]
    up.run_many([([col(a, j) for j in range(B)], p, q)])
    t = batch_inverse(F, pre[B - 2], B)
    down.run_many([([col(t, 0)] + [col(a, j) for j in range(B)] + p[:B - 2], [col(out, j) for j in range(B)], q)])
