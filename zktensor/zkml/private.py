"""Private weights: witness values bound by a Poseidon commitment, a public output.

Each weight w (``weight_bits`` = bw signed bits) is bw bit wires, range-checked by
booleanity; its value is the LC Σ 2^i b_i - 2^(bw-1) (no wire of its own). Each bias is
likewise the bits of its own width (the layer's largest bias, plus a sign bit). The products
w·x of a Linear or Conv2d layer are constraints over the weights' bit LCs and the inputs' LCs
(``products``: one per product, or Winograd's pairs for a convolution, every product wire
shifted to be non-negative), and the accumulator is their sum plus the bias LC, rescaled as
with fixed weights. The bounds assume the worst weights the bit widths allow, so the circuit
is sound whatever weights a prover commits to.

Commitment. The offset values v = w + 2^(bw-1) in [0, 2^bw) (the bit wires' plain sum) are
packed, per layer and per stream (weights, then biases, in the layers' order), floor(253 /
width) to a field element: e = Σ_j v_j · 2^(width·j) (injective: e < 2^253 < p), one linear
constraint per element tying it to the bits. The elements e_1..e_m are hashed by a chain of
circomlib Poseidon calls: h = Poseidon(e_1..e_16) (all of them when m <= 16), then
h = Poseidon(h, next 15) until they run out. The final h is a public output: the last
public signal after the model's outputs.

Why every weight bit is needed (about bw + 1.3 constraints a weight: bw booleanity, one
product, 621/(15·floor(253/bw)) for the hash; the products are the layer's own). Binding:
the statement is "the committed weights give this output", so one commitment must open to
one weight vector. Packing is a linear map F^m -> F, injective only on values confined to
[0, 2^bw) each: without every v_j's range check, e = Σ v_j 2^(bw·j) has other solutions (v_j +
2^bw, v_(j+1) - 1, ...) that hash the same, and a proof could use weights nobody committed
to (test_zkml_private builds such a witness and the packing constraint refuses it). An exact
range check of a bw-bit value needs about bw R1CS multiplications (without lookups, which
Groth16 over R1CS lacks: the vanishing polynomial of 2^bw points has degree 2^bw, and each
multiplication at most doubles a degree), which the bits meet; their value LC costs no
constraint (it is substituted into the products and the packing).
The alternative without packing, one hash input per weight, costs circomlib's Poseidon
621/15 = 41.4 constraints a weight: more than bw + 1.3 for any bw <= 32. Overflow: the same
range checks give |w| <= 2^(bw-1), which the accumulator's bounds (no wrap modulo p) assume.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from . import gadgets as G
from . import poseidon as PS
from .lc import LC, Side, ints_to_words, signed_to_words
from .products import inner_products

PACK_BITS = 253


def _bits_lc(bits: torch.Tensor, b: int) -> LC:
    """(N, b) bit wires -> the LC of the signed value Σ 2^i b_i - 2^(b-1)."""
    N = bits.shape[0]
    pw = torch.tensor([1 << i for i in range(b)], dtype=torch.int64).expand(N, b)
    return LC(torch.cat([bits, torch.zeros(N, 1, dtype=torch.int64)], 1),
              torch.cat([pw, torch.full((N, 1), -(1 << (b - 1)), dtype=torch.int64)], 1))


def _windows(L, x, fan: int):
    """The inputs each output position reads, (Pn, fan) in the weights' (C, kh, kw) order: their
    LCs, bounds on their magnitude, and gather(v (B, *input shape)) -> values (B, Pn, fan)."""
    amax = torch.maximum(x.lo.abs(), x.hi.abs())
    if L.op == "linear":
        xl = x.lc.flat()
        return LC(xl.idx.unsqueeze(0), xl.coef.unsqueeze(0)), amax.reshape(1, fan), \
            (lambda v: v.reshape(v.shape[0], 1, fan))
    from .circuit import _unfold
    st, pd = L.attrs["stride"], L.attrs["padding"]
    kern = tuple(L.attrs["w_int"].shape[2:])

    def win(t: torch.Tensor) -> torch.Tensor:        # (C, H, W, K) -> (Pn, fan, K)
        u = _unfold(t, kern, st, pd)
        return u.permute(1, 2, 0, 3, 4, 5).reshape(u.shape[1] * u.shape[2], fan, t.shape[-1])
    xs = LC(win(x.lc.idx), win(x.lc.coef))

    def gather(v: torch.Tensor) -> torch.Tensor:
        u = F.pad(v, (pd[1], pd[1], pd[0], pd[0])).unfold(2, kern[0], st[0]).unfold(3, kern[1], st[1])
        return u.permute(0, 2, 3, 1, 4, 5).reshape(v.shape[0], -1, fan)
    return xs, win(amax.unsqueeze(-1))[..., 0], gather


class PrivateWeights:
    def __init__(self, circuit):
        self.c = circuit
        self.streams = []        # (bit wires (N, width), offset values (N,), width): packing order

    def _param_bits(self, values: torch.Tensor, width: int, name: str):
        sys = self.c.sys
        flat = values.reshape(-1)
        bits = sys.wires((flat.numel(), width), f"{name} bits")
        G.booleanity(sys, f"{name} bits", bits)
        off = flat + (1 << (width - 1))
        if flat.numel() and (int(off.min()) < 0 or int(off.max()) >= 1 << width):
            raise G.BoundError(f"{name}: a value does not fit {width} signed bits")
        self.streams.append((bits, off, width))
        bit_vals = G.to_bits(off, width).reshape(-1)
        return bits, bit_vals

    def layer(self, i, L, x, name):
        c, sys = self.c, self.c.sys
        w, b, k = L.attrs["w_int"], L.attrs["b_int"], L.attrs["k"]
        bw = c.options.weight_bits
        H = 1 << (bw - 1)
        bb = G.bits_for(int(b.min()), int(b.max())) + 1
        wbits, wvals = self._param_bits(w, bw, f"{name}: private weight")
        bbits, bvals = self._param_bits(b, bb, f"{name}: private bias")
        O = w.shape[0]
        fan = w[0].numel()
        xmax = int(max(-x.lo.min(), x.hi.max()))
        up = 1 << max(-k, 0)
        G.check_limit((fan * H * xmax + (1 << (bb - 1))) * up, f"{name}: accumulator")
        wl = _bits_lc(wbits, bw).reshape(O, fan)                 # the weights' signed LCs
        xs, xamax, gather = _windows(L, x, fan)                   # (Pn, fan) input LCs and |x| bounds
        Pn = xs.shape[0]
        acc, pfn, c.products[i] = inner_products(sys, name, wl, H, xs, xamax)
        bound = (xamax.sum(1) * H).repeat(O) + (1 << (bb - 1))
        bl = _bits_lc(bbits, bb)
        acc = acc + LC(bl.idx.repeat_interleave(Pn, 0), bl.coef.repeat_interleave(Pn, 0))
        if up > 1:
            acc, bound = acc.scale(up), bound * up
        o, olo, ohi, rfn, c.gadgets[i] = G.rescale(sys, name, acc, -bound, bound, max(k, 0), relu=i in c.qm.fused)
        shape = L.shape
        from .circuit import T
        t = T(o.reshape(*shape), olo.reshape(shape), ohi.reshape(shape))
        wb_ids = torch.cat([wbits.reshape(-1), bbits.reshape(-1)])
        wb_vals = torch.cat([wvals, bvals])
        wv = w.reshape(O, fan)
        bias = b.repeat_interleave(Pn)

        def fn(W, v):
            W[:, wb_ids] = wb_vals
            a = pfn(W, wv, gather(v)) + bias
            return rfn(W, a * up).reshape(-1, *shape)
        return t, fn

    # -- the commitment -------------------------------------------------------------------
    def packed(self):
        """[(bit wires (n, width) of the values packed in the element, offset values, width)] per
        field element, in hashing order."""
        out = []
        for bits, off, width in self.streams:
            per = PACK_BITS // width
            for s in range(0, off.numel(), per):
                out.append((bits[s:s + per], off[s:s + per], width))
        return out

    def packed_values(self) -> list[int]:
        vals = []
        for _, off, width in self.packed():
            vals.append(sum(int(v) << (width * j) for j, v in enumerate(off.tolist())))
        return vals

    def commit(self):
        c, sys = self.c, self.c.sys
        elems = self.packed()
        values = self.packed_values()
        if not elems:
            raise ValueError("weights='private' but the model has no Linear or Conv2d weights")
        ew = sys.wires((len(elems),), "packed weights")
        # e - Σ 2^(width·j + i) bit_(j,i) = 0, coefficients as words (powers up to 2^252)
        K = max(b.numel() for b, _, _ in elems) + 1
        idx = np.zeros((len(elems), K), np.int64)
        words = np.zeros((len(elems), K, 8), np.uint32)
        for r, (bits, _, width) in enumerate(elems):
            ids = bits.reshape(-1).numpy()
            n = ids.size
            idx[r, :n] = ids
            e = np.arange(n)              # bit j·width + i sits at flat position j·width + i
            words[r, np.arange(n), e // 32] = (np.ones(n, np.uint64) << (e % 32).astype(np.uint64)).astype(np.uint32)
            idx[r, n] = int(ew[r])
            words[r, n] = signed_to_words([-1])[0]
        sys.add("private weights: packing", Side(idx, words=words))
        for r, v in enumerate(values):
            c.big_values[int(ew[r])] = v
        # the hash chain
        chain, h_wire, h = [], None, None
        pos = 0
        while pos < len(values):
            take = PS.MAX_INPUTS if h_wire is None else PS.MAX_INPUTS - 1
            ins = ([] if h_wire is None else [h_wire]) + [int(w) for w in ew[pos:pos + take]]
            vals = ([] if h is None else [h]) + values[pos:pos + take]
            pos += take
            last = pos >= len(values)
            h_wire, h = self._hash(ins, vals, "output" if last else "internal", len(chain))
            chain.append(h)
        c.commitment_wire, c.commitment = h_wire, h

    def _hash(self, in_wires, in_vals, kind, n):
        c, sys = self.c, self.c.sys
        sides, (out_ids, out_words), n_local = PS.template_arrays(len(in_wires))
        fresh = sys.wires((n_local - 1 - len(in_wires),), f"poseidon hash {n}: S-box wires")
        local = np.concatenate([[0], in_wires, fresh.numpy()]).astype(np.int64)
        sys.add(f"poseidon hash {n}: S-boxes", *[Side(local[ids], words=w) for ids, w in sides])
        h_wire = int(sys.wires((1,), f"poseidon hash {n}: output" if kind == "internal" else "weight commitment",
                               kind)[0])
        idx = np.concatenate([local[out_ids], [h_wire]])[None]
        words = np.concatenate([out_words, signed_to_words([-1])])[None]
        sys.add(f"poseidon hash {n}: output", Side(idx, words=words))
        sbox, h = PS.sbox_values(in_vals)
        for w, v in zip(fresh.tolist(), sbox):
            c.big_values[w] = v
        c.big_values[h_wire] = h
        return h_wire, h


__all__ = ["PrivateWeights", "ints_to_words"]
