"""Fixed-base scalar multiplication k·P for many scalars and one base P, as tensor ops.

The setup multiplies the generators by one scalar per wire and per domain point,
and the prover multiplies alpha_1, beta_1, delta_1, delta_2 by its blinding
factors for every proof. Both are one base, many (or repeated) scalars, where a
precomputed table beats double-and-add (``PointTensor * k``: one launch per bit):

    T[w][d] = d·2^(8w)·P        for windows w < W = ceil(bits(r)/8), bytes d < 256
    k·P     = Σ_w T[w][byte_w(k)]

A multiplication is one gather of W table rows per scalar (a scalar's bytes are
its digits: no recoding) and a tree of log2(W) batched complete additions
(``PointTensor.__add__``, which handles the identity that T[w][0] is). The table
costs W·8 doublings and 8 batched additions to build (a few hundred KB to a few
MB per base) and is kept by its owner. Scalars are processed in chunks so the
gathered (W, chunk) points stay small.
"""
from __future__ import annotations

import numpy as np
import torch

from ..points import GroupSpace, PointTensor, cat as cat_points
from ..tensor import FieldTensor

WINDOW = 8


class FixedBase:
    """Σ_j k_j·P_j for fixed bases P_j (a PointTensor of shape () or (nb,), or affine
    points of ``group``): ``mul`` for one base, ``combine`` for several."""

    def __init__(self, P, group: GroupSpace | None = None, device=None, chunk: int = 1 << 14):
        if not isinstance(P, PointTensor):
            if group is None:
                raise TypeError("FixedBase(P): give P as a PointTensor or pass its group")
            P = group.tensor(P if isinstance(P, list) else [P], device=device)
        P = P.reshape(-1)
        self.G = G = P.G
        self.nb = P.shape[0]
        self.device = P.device
        self.chunk = chunk
        self.W = -(-G.r.bit_length() // WINDOW)
        n = 1 << WINDOW
        rows = [P]                                                    # B_w = 2^(8w)·P_j
        for _ in range(1, self.W):
            b = rows[-1]
            for _ in range(WINDOW):      # single doublings: the kernel every group already has
                b = b.double()
            rows.append(b)
        B = cat_points([b.reshape(self.nb, 1) for b in rows], dim=1).reshape(self.nb * self.W)
        T = G.identity((self.nb * self.W, n), device=self.device)
        T[:, 1] = B
        half = 1
        while half < n // 2:
            top = T[:, half].double()                                 # T[2h] = 2·T[h]
            T[:, 2 * half] = top
            T[:, 2 * half + 1:4 * half] = T[:, 1:2 * half] + top.reshape(-1, 1)   # T[2h + e], e < 2h
            half *= 2
        self.table = T.reshape(self.nb * self.W * n).contiguous()     # row (j·W + w)·256 + d

    def memory_bytes(self) -> int:
        return self.table.data.numel() * 4

    def digits(self, scalars) -> np.ndarray:
        """(m, W) bytes of standard-form scalars (ints in [0, r) or a FieldTensor of Fr)."""
        G = self.G
        Lr = G.Fr.limbs
        if isinstance(scalars, FieldTensor):
            if scalars.F != G.Fr:
                raise TypeError(f"{G.name}: scalars must be {G.Fr.name} elements")
            from ..kernels.field_programs import from_mont
            words = from_mont(G.Fr, scalars.data.reshape(Lr, -1)).cpu().T.contiguous().numpy()
            raw = words.view(np.uint8).reshape(words.shape[0], 4 * Lr)
        else:
            vals = [int(k) for k in scalars]
            for i, k in enumerate(vals):
                if not 0 <= k < G.r:
                    raise ValueError(f"scalar {i} is outside [0, r)")
            raw = np.frombuffer(b"".join(k.to_bytes(4 * Lr, "little") for k in vals),
                                dtype=np.uint8).reshape(len(vals), 4 * Lr)
        if raw.shape[1] > self.W and raw[:, self.W:].any():
            raise ValueError("scalar wider than the table")
        return raw[:, :self.W]

    def mul(self, scalars, base: int = 0) -> PointTensor:
        """k_i·P_base for every scalar: a (m,) PointTensor."""
        d = self.digits(scalars)
        idx = d.astype(np.int64) + ((base * self.W + np.arange(self.W, dtype=np.int64)) << WINDOW)
        return self._sum_rows(idx)

    def combine(self, rows) -> PointTensor:
        """Σ_j rows[i][j]·P_j for every row: a (m,) PointTensor."""
        rows = [list(r) for r in rows]
        if any(len(r) != self.nb for r in rows):
            raise ValueError(f"every row needs {self.nb} scalars")
        d = self.digits([k for r in rows for k in r]).reshape(len(rows), self.nb * self.W)
        idx = d.astype(np.int64) + (np.arange(self.nb * self.W, dtype=np.int64) << WINDOW)
        return self._sum_rows(idx)

    def _sum_rows(self, idx: np.ndarray) -> PointTensor:
        """Sum over each row of table indices (m, k): gather, then a tree of additions."""
        G = self.G
        m, k = idx.shape
        out = []
        for a in range(0, m, self.chunk):
            ii = torch.from_numpy(np.ascontiguousarray(idx[a:a + self.chunk].T).reshape(-1)).to(self.device)
            x = PointTensor(G, self.table.data.index_select(2, ii).reshape(G.L, G.K, k, -1))
            while x.shape[0] > 1:
                h = x.shape[0] // 2
                s = x[:h] + x[h:2 * h]
                x = cat_points([s, x[2 * h:]]) if x.shape[0] % 2 else s
            out.append(x[0])
        if not out:
            return G.identity((0,), device=self.device)
        return cat_points(out) if len(out) > 1 else out[0]

    def __call__(self, k: int) -> PointTensor:
        """k·P_0 for one scalar (a 0-d PointTensor)."""
        return self.mul([k % self.G.r])[0]


__all__ = ["FixedBase", "WINDOW"]
