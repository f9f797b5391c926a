"""The inner products of a private-weight layer: Σ_f w[o, f] · x[pos, f] for every output
channel o and position pos, one R1CS multiplication per product, with two savings.

Shifted product wires. A product wire holds w·x + M, M a compile-time bound on |w·x| (H·max|x|,
H = 2^(bw-1) >= |w|), so its value lies in [0, 2M]: the constraint is A·B = p - M (the shift is a
constant term of C, no constraint of its own) and the accumulator subtracts the constants. The
witness then holds small non-negative integers where half the products were negative, i.e.
p - |v|, full-width field elements: an MSM's signed-digit windows see a few digits for a small
scalar and one per window for p - |v|. A change of variable, so soundness is unchanged.

Paired products (Winograd's inner-product identity): for f = 2j, 2j+1,

    w_a·x_c + w_b·x_d = (w_a + x_d)(w_b + x_c) - w_a·w_b - x_c·x_d,

an algebraic identity over any ring, so over F_p; the accumulator (the LC summing the terms)
equals Σ_f w·x as a field element exactly as with plain products, and the rescale's range
argument (which needs only that value and its integer bounds) is unchanged. The weight pairs
w_a·w_b are made once per output channel and the input pairs x_c·x_d once per position, so a
layer whose weights are reused at many positions (a convolution) pays about O·P·fan/2 + O·fan/2
+ P·fan/2 multiplications instead of O·P·fan; a Linear layer (P = 1) would pay more, and keeps
plain products. Each layer takes the cheaper of the two counts.

Known zeros. An input that is identically zero at compile time (a convolution's padding: an LC
with no nonzero coefficient) needs no product: w·0 = 0. A pair whose two inputs are zero
contributes (w_a)(w_b) - w_a·w_b - 0 = 0 and is left out with its weight-pair term; an input
pair with a zero side is 0.

Plain products are the fallback whenever pairs would not be fewer, or when a paired factor's
square could reach 2^62 (the exact int64 range the witness is computed in).
"""
from __future__ import annotations

import torch

from . import gadgets as G
from .lc import INT_LIMIT, LC, System


def _sel(lc: LC, pos: torch.Tensor, f: torch.Tensor) -> LC:
    """Elements (pos[e], f[e]) of an LC of shape (Pn, fan)."""
    return LC(lc.idx[pos, f], lc.coef[pos, f])


def _rows(n_out: int, Pn: int, pos: torch.Tensor, ids: torch.Tensor, coef: int) -> LC:
    """An LC per (o, position) summing coef · ids[o, e] over the entries e of that position
    (pos sorted ascending): (O·Pn,) rows padded with wire 0, coefficient 0."""
    E = pos.numel()
    counts = torch.bincount(pos, minlength=Pn)
    width = int(counts.max()) if E else 0
    first = torch.cumsum(counts, 0) - counts
    slot = torch.arange(E) - first[pos]
    idx = torch.zeros(n_out, Pn, width, dtype=torch.int64)
    cf = torch.zeros(n_out, Pn, width, dtype=torch.int64)
    idx[:, pos, slot] = ids
    cf[:, pos, slot] = coef
    return LC(idx.reshape(n_out * Pn, width), cf.reshape(n_out * Pn, width))


def _const_rows(n_out: int, Pn: int, pos: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """Σ values[e] over the entries of each position, repeated for every o: (O·Pn,)."""
    per_pos = torch.zeros(Pn, dtype=torch.int64).index_add_(0, pos, values)
    return per_pos.repeat(n_out)


def _product_block(sys: System, name: str, what: str, A: LC, B: LC, M: torch.Tensor, shape):
    """Wires (shape) holding A·B + M, one constraint each: A·B = p - M."""
    p = sys.wires(shape, f"{name}: {what}")
    n = p.numel()
    C = LC(torch.stack([p.reshape(-1), torch.zeros(n, dtype=torch.int64)], 1),
           torch.stack([torch.ones(n, dtype=torch.int64), -M.reshape(-1)], 1))
    sys.add(f"{name}: {what}", A, B, C)
    return p


def plan_cost(O: int, live: torch.Tensor) -> tuple[int, int]:
    """(plain, paired) multiplication counts for O channels over the (Pn, fan) live mask."""
    fan = live.shape[1]
    npair = fan // 2
    c, d = live[:, 0:2 * npair:2], live[:, 1:2 * npair:2]
    main = int((c | d).sum())
    paired = O * main + O * npair + int((c & d).sum()) + O * int(live[:, 2 * npair:].sum())
    return O * int(live.sum()), paired


def inner_products(sys: System, name: str, wl: LC, H: int, xs: LC, xamax: torch.Tensor):
    """Constraints for Σ_f w[o, f]·x[pos, f] (module doc).

    wl: weight LCs (O, fan) with |w| <= H; xs: input LCs (Pn, fan) with |x| <= xamax (Pn, fan).
    Returns (acc LC (O·Pn,) equal to the inner products, fn(W, wv (O, fan), xv (B, Pn, fan)) ->
    (B, O·Pn) values, filling the product wires, info {"scheme", "multiplications"})."""
    O, fan = wl.shape
    Pn = xs.shape[0]
    live = (xs.coef != 0).any(-1)
    plain_n, paired_n = plan_cost(O, live)
    # a paired product's factors are sums of a weight and an input: its values must stay within
    # the exact int64 range too (checked in Python ints, before any tensor could wrap)
    xm = int(xamax.max()) if xamax.numel() else 0
    paired = fan >= 2 and paired_n < plain_n and 2 * (H + xm) ** 2 < INT_LIMIT
    steps = []                              # fn(W, wv, xv) filling one block of wires
    lcs = []
    const = torch.zeros(O * Pn, dtype=torch.int64)

    def plain(f_lo: int, f_hi: int, what: str):
        nonlocal const
        pos, f = torch.nonzero(live[:, f_lo:f_hi], as_tuple=True)
        f = f + f_lo
        if pos.numel() == 0:
            return
        E = pos.numel()
        M = H * xamax[pos, f]
        G.check_limit(2 * int(M.max()), f"{name}: products")
        wsel = LC(wl.idx[:, f], wl.coef[:, f])                       # (O, E)
        xsel = _sel(xs, pos, f)                                      # (E,)
        A = wsel.reshape(O * E)
        B = LC(xsel.idx.unsqueeze(0).expand(O, E, xs.K).reshape(O * E, xs.K),
               xsel.coef.unsqueeze(0).expand(O, E, xs.K).reshape(O * E, xs.K))
        p = _product_block(sys, name, what, A, B, M.repeat(O), (O, E))
        lcs.append(_rows(O, Pn, pos, p, 1))
        const = const - _const_rows(O, Pn, pos, M)

        def fill(W, wv, xv, p=p, pos=pos, f=f, M=M):
            W[:, p.reshape(-1)] = (wv[:, f].unsqueeze(0) * xv[:, pos, f].unsqueeze(1) + M).reshape(xv.shape[0], -1)
        steps.append(fill)

    if not paired:
        plain(0, fan, "weight × input products")
    else:
        npair = fan // 2
        fa, fb = torch.arange(0, 2 * npair, 2), torch.arange(1, 2 * npair, 2)
        c, d = live[:, fa], live[:, fb]
        # (w_a + x_d)(w_b + x_c) for every live (position, pair)
        pos, j = torch.nonzero(c | d, as_tuple=True)
        E = pos.numel()
        Mm = (H + xamax[pos, fb[j]]) * (H + xamax[pos, fa[j]])
        G.check_limit(2 * int(Mm.max()), f"{name}: paired products")
        wa, wb = LC(wl.idx[:, fa[j]], wl.coef[:, fa[j]]), LC(wl.idx[:, fb[j]], wl.coef[:, fb[j]])   # (O, E)
        xc, xd = _sel(xs, pos, fa[j]), _sel(xs, pos, fb[j])                                      # (E,)

        def ex(x: LC) -> LC:
            return LC(x.idx.unsqueeze(0).expand(O, E, x.K), x.coef.unsqueeze(0).expand(O, E, x.K))
        A = (wa + ex(xd)).reshape(O * E)
        B = (wb + ex(xc)).reshape(O * E)
        pm = _product_block(sys, name, "paired products (w_a + x_d)(w_b + x_c)", A, B, Mm.repeat(O), (O, E))
        lcs.append(_rows(O, Pn, pos, pm, 1))
        const = const - _const_rows(O, Pn, pos, Mm)
        # w_a·w_b once per channel, subtracted at every live (position, pair)
        Hw = torch.full((O * npair,), H * H, dtype=torch.int64)
        pw = _product_block(sys, name, "weight pairs w_a·w_b", LC(wl.idx[:, fa], wl.coef[:, fa]).reshape(O * npair),
                            LC(wl.idx[:, fb], wl.coef[:, fb]).reshape(O * npair), Hw, (O, npair))
        lcs.append(_rows(O, Pn, pos, pw[:, j], -1))
        const = const + _const_rows(O, Pn, pos, torch.full((E,), H * H, dtype=torch.int64))
        # x_c·x_d once per position where both are live, subtracted for every channel
        ipos, ij = torch.nonzero(c & d, as_tuple=True)
        Ei = ipos.numel()
        if Ei:
            Mi = xamax[ipos, fa[ij]] * xamax[ipos, fb[ij]]
            pi = _product_block(sys, name, "input pairs x_c·x_d", _sel(xs, ipos, fa[ij]), _sel(xs, ipos, fb[ij]),
                                Mi, (Ei,))
            lcs.append(_rows(O, Pn, ipos, pi.unsqueeze(0).expand(O, Ei), -1))
            const = const + _const_rows(O, Pn, ipos, Mi)

        def fill(W, wv, xv, pm=pm, pw=pw, pos=pos, j=j, Mm=Mm):
            B_ = xv.shape[0]
            A_ = wv[:, fa[j]].unsqueeze(0) + xv[:, pos, fb[j]].unsqueeze(1)
            B2 = wv[:, fb[j]].unsqueeze(0) + xv[:, pos, fa[j]].unsqueeze(1)
            W[:, pm.reshape(-1)] = (A_ * B2 + Mm).reshape(B_, -1)
            W[:, pw.reshape(-1)] = (wv[:, fa] * wv[:, fb] + H * H).reshape(1, -1).expand(B_, -1)
            if Ei:
                W[:, pi] = xv[:, ipos, fa[ij]] * xv[:, ipos, fb[ij]] + Mi
        steps.append(fill)
        if fan % 2:
            plain(fan - 1, fan, "weight × input products (the odd one)")
    acc = LC.const(const)
    for lc in lcs:
        acc = acc + lc
    acc = acc.compact()

    def fn(W, wv, xv):
        for s in steps:
            s(W, wv, xv)
        return (wv.unsqueeze(0).unsqueeze(2) * xv.unsqueeze(1)).sum(-1).reshape(xv.shape[0], -1)
    mults = paired_n if paired else plain_n
    return acc, fn, {"scheme": "paired" if paired else "plain", "multiplications": mults}
