"""Batch inversion as a tree of compiled products (Montgomery's trick, blocked).

For m values a (an Fq limb tensor (L, m), any strides, no zeros) the inverses
come from one field inversion and about 3 products per value:

    up:   blocks of B values -> prefix products p_1..p_{B-1} (p_{B-1} the
          block product), recursively over the block products;
    top:  at most TOP values inverted on the host (`field_programs.invert_few`);
    down: from t = 1/p_{B-1}: 1/a_{B-1} = t·p_{B-2}, t <- t·a_{B-1}, ...

Block i is the values {i, q + i, 2q + i, ...} (q = m / B), so member j of every
block is the contiguous view a[:, j·q:(j+1)·q] (unit strides, which the CPU
target's vector loops need). Each level is one launch of a traced program over
those views, so the whole inversion is 2·log_B(m) launches with no copies
when m is a multiple of B (else one padded copy with ones; deeper levels pad their
block products with ones where they are written). It is the one batch inversion:
the MSM's batch-affine levels, the affine form of points and `zt.batch_inverse` use it.
"""
from __future__ import annotations

import torch

from .field_programs import invert_few, program

TOP = 16    # values from which the host inverts: fewer than the two launches of levels they
            # save would cost


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
    if m % B or a.stride(1) != 1 or out.stride(1) != 1:     # a padded, unit-stride copy
        pad = F.ones((-(-m // B) * B,), device=a.device).data
        pad[:, :m] = a
        res = batch_inverse(F, pad, block)
        out.copy_(res[:, :m])
        return out
    progs = _programs(F, B, a)
    if all(c.target == "cpu" and len(c.meta["calls"]) == 1 for c in progs):
        # run_many takes operands as (address, limb stride) there
        addr = lambda t: (t.data_ptr(), t.stride(0))              # noqa: E731
        member = lambda x, j, q: (x[0] + 4 * j * q, x[1])         # noqa: E731  (4: int32 words)
    else:
        addr = lambda t: t                                        # noqa: E731
        member = lambda x, j, q: x[:, j * q:(j + 1) * q]          # noqa: E731
    _levels(F, B, progs, addr, member, addr(a), addr(out), m, a)
    return out


def _levels(F, B, progs, addr, member, a, out, m, like):
    """The levels below one of m values (a multiple of B) at operand a, written to out:
    the block products' inverses recursively, with the one program pair of the call
    (looking it up per level, with tensor views per operand, was most of a small
    inversion, and the reduction's halving steps each have one)."""
    up, down = progs
    q = m // B
    top = q <= max(B, TOP)
    qp = q if top or q % B == 0 else q + B - q % B        # the block products, padded with ones
    pre = torch.empty((B - 1, F.limbs, qp), dtype=torch.int32, device=like.device)  # p_1..p_{B-1}
    if qp > q:
        pre[B - 2, :, q:] = F.ones((1,), device=like.device).data
    cols = lambda t: member(addr(t), 0, q)                # noqa: E731  its first q columns
    up.run_many([([member(a, j, q) for j in range(B)], [cols(p) for p in pre], q)])
    if top:
        t = invert_few(F, pre[B - 2, :, :q])
    else:
        t = torch.empty((F.limbs, qp), dtype=torch.int32, device=like.device)
        _levels(F, B, progs, addr, member, addr(pre[B - 2]), addr(t), qp, like)
    down.run_many([([cols(t)] + [member(a, j, q) for j in range(B)] + [cols(p) for p in pre[:B - 2]],
                    [member(out, j, q) for j in range(B)], q)])


def _programs(F, B, a):
    """The compiled up and down programs for blocks of B, launched through
    `CompiledProgram.run_many`: on the CPU by operand addresses, without the per-operand
    views, checks and output allocations of a tensor launch, which made
    the levels of small inversions mostly overhead (the bucket reduction's log2 N steps each
    invert one batch); elsewhere one launch each."""
    from ..runtime.target import choose
    from ..tune.resolve import tuned_scope
    from .elementwise import get_program
    with tuned_scope("mul", F.name, a.shape[1], a.device):
        strategy, target = choose(a.device.type, None, None)
        return (get_program(program(F, ("inv_up", B), B, _up(B)), strategy, target),
                get_program(program(F, ("inv_down", B), 1 + B + (B - 2), _down_with_a0(B)), strategy, target))
