"""PointTensor: elliptic-curve points in limb tensors, and `zt.group(name)`.

    import zktensor as zt
    G = zt.group("bn254.g1")                # or "bn254.g2", "bls12_381.g1/g2", "mnt4753.g1"
    P = G.tensor([(1, 2), None])            # affine (x, y) ints; None is the identity
    Q = G.generator(4) * [1, 2, 3, 4]       # scalar multiplication, per element
    R = (P[0] + Q).double() - Q
    R.to_affine()                           # back to tuples (G2: ((x0, x1), (y0, y1)))
    G.from_bytes(buf)                       # snarkjs's point layout (zkey sections)

Storage: `data` is int32 of shape (L, K, *batch): L 32-bit words per base-field
element (limb-major, limb 0 least significant, Montgomery form as in
`FieldTensor`), K = 4·degree base-field components of an XYZZ point
(X, Y, ZZ, ZZZ; each an Fq2 pair (c0, c1) for G2), x = X/ZZ, y = Y/ZZZ. The
identity is ZZ = ZZZ = 0 (X = Y = 1). All arithmetic is compiled from `ec`
programs (`zktensor.ir.ec` -> ec-to-field -> the field pipeline); this module
adds what a straight-line kernel cannot: it finds the exceptional cases of
the incomplete addition formula (an identity operand, P = Q, P = -Q) from
the cross-multiplied differences the kernel also returns, and patches those
rows with the doubling kernel or the identity.

Point checks: `G.tensor` and `G.from_bytes` refuse coordinates outside [0, q)
and points off the curve with a ValueError naming the first bad index;
`in_subgroup()` checks r·P = O.
"""
from __future__ import annotations

import numpy as np
import torch

from .algebra.curves import group as group_record, _check_shape
from .kernels import msm_ec
from .kernels.point_formulas import (add_complete, affine, comps, cross, double_n, f_curve, is_id, is_zero, neg,
                                     to_host)
from .kernels.elementwise import broadcast_shapes
from .kernels.field_programs import from_mont
from .runtime import compile_shards
from .tensor import FieldTensor, field as field_space, _flatten, _unflatten

HOST_AFFINE_UPTO = 16  # CPU points up to which `to_affine` converts on Python ints (one inversion a
                       # point), not with the kernels' batch inversion, whose launches cost more than
                       # a proof's few final points (timings: the commit that made this so)


class GroupSpace:
    """A group as a maker of point tensors: `zt.group("bn254.g1")`."""

    def __init__(self, params):
        self.params = params
        self.F = field_space(params.base_field)      # coordinates' base field
        self.Fr = field_space(params.scalar_field)   # scalars
        self.degree = params.degree
        self.K = 4 * params.degree
        self.L = self.F.limbs

    name = property(lambda self: self.params.name)
    r = property(lambda self: self.params.r)

    def __getattr__(self, item):          # the record's data: curve, triton_cuts, ...
        if item == "params":
            raise AttributeError(item)
        return getattr(self.params, item)

    def __repr__(self):
        return f"zt.group({self.name!r})"

    def __eq__(self, other):
        return isinstance(other, GroupSpace) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    # -- constants -------------------------------------------------------------
    def _one_col(self, device=None) -> torch.Tensor:
        return self.F.full((), 1, device=device).data          # (L,)

    def identity(self, shape=(), device=None) -> "PointTensor":
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        data = torch.zeros((self.L, self.K) + shape, dtype=torch.int32, device=device)
        one = self._one_col(device).reshape((self.L,) + (1,) * len(shape))
        data[:, 0] = one
        data[:, self.degree] = one
        return PointTensor(self, data)

    def generator(self, shape=(), device=None) -> "PointTensor":
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        g = self.tensor(self.params.generator, device=device)
        return PointTensor(self, g.data.reshape((self.L, self.K) + (1,) * len(shape))
                           .expand((self.L, self.K) + shape).contiguous())

    # -- constructors ----------------------------------------------------------
    def tensor(self, points, device=None) -> "PointTensor":
        """From affine points as Python ints: a point, None, or (nested) lists of them."""
        if points is None or isinstance(points, tuple):
            shape, flat = (), [points]
        else:
            shape, flat = _flatten_points(points)
        d, p = self.degree, self.params.p
        words = []
        inf = np.zeros(len(flat), dtype=bool)
        for i, P in enumerate(flat):
            if P is None:
                inf[i] = True
                words.append([0] * (2 * d))
                continue
            _check_shape(self.params, P)
            c = list(P) if d == 1 else [*P[0], *P[1]]
            if not all(0 <= v < p for v in c):
                raise ValueError(f"{self.name}: point {i} has a coordinate outside [0, q)")
            words.append(c)
        m = len(flat)
        xy = self.F.tensor(words).data if m else torch.zeros((self.L, 0, 2 * d), dtype=torch.int32)
        xy = xy.reshape(self.L, m, 2 * d).permute(0, 2, 1).contiguous()
        if device is not None:
            xy = xy.to(device)
        inf_t = torch.from_numpy(inf).to(xy.device)
        return self.from_affine(xy, inf_t, check=True).reshape(shape)

    def from_affine(self, xy: torch.Tensor, inf: torch.Tensor, check: bool = True) -> "PointTensor":
        """From Montgomery-form affine data xy (L, 2·degree, m) and an identity mask (m,).
        With `check`, points off the curve raise ValueError."""
        L, d = self.L, self.degree
        m = xy.shape[2]
        if check and m:
            bad = self._off_curve(xy) & ~inf
            if bool(bad.any()) and not compile_shards.active():     # (a compile pass's values are meaningless)
                i = int(torch.nonzero(bad)[0])
                raise ValueError(f"{self.name}: point {i} is not on the curve")
        data = torch.zeros((L, self.K, m), dtype=torch.int32, device=xy.device)
        data[:, :2 * d] = xy
        one = self._one_col(xy.device).reshape(L, 1)
        data[:, 2 * d] = one
        data[:, 3 * d] = one
        if bool(inf.any()):
            data[:, :, inf] = self.identity((1,), device=xy.device).data
        return PointTensor(self, data)

    def _off_curve(self, xy: torch.Tensor) -> torch.Tensor:
        res = msm_ec.run(self.params, "on_curve", ("affine",), f_curve(self.params), comps(xy))
        return ~is_zero(torch.stack(res, dim=1))

    def from_bytes(self, data, device=None, check: bool = True) -> "PointTensor":
        """Points in snarkjs's layout (`toRprLEM`): affine x then y (x0, x1, y0, y1 for G2),
        each coordinate F.bytes little-endian bytes in Montgomery form (R = 2^(8·bytes), the
        same R as ours); all-zero bytes are the identity."""
        data = bytes(data)
        L, d, nb = self.L, self.degree, self.F.bytes
        size = 2 * d * nb
        if len(data) % size:
            raise ValueError(f"{self.name}: {len(data)} bytes is not a whole number of {size}-byte points")
        m = len(data) // size
        arr = np.frombuffer(data, dtype="<u4").reshape(m, 2 * d, L)
        words = torch.from_numpy(arr.view(np.int32).copy())
        inf = torch.all(words.reshape(m, -1) == 0, dim=1)
        from .tensor import _less_than_p
        ok = _less_than_p(words.permute(2, 0, 1).reshape(L, -1), self.F.params).reshape(m, 2 * d)
        bad = ~ok.all(dim=1) & ~inf
        if bool(bad.any()):
            raise ValueError(f"{self.name}: point {int(torch.nonzero(bad)[0])}: coordinate not reduced modulo q")
        xy = words.permute(2, 1, 0).contiguous()
        if device is not None:
            xy, inf = xy.to(device), inf.to(device)
        return self.from_affine(xy, inf, check=check)

    def random(self, shape, generator: torch.Generator | None = None, device=None) -> "PointTensor":
        """k·g for uniform random scalars k (g the group generator)."""
        k = self.Fr.random(shape, generator=generator, device=device)
        return self.generator(k.shape, device=device) * k


def _flatten_points(values):
    if isinstance(values, list):
        if not values:
            return (0,), []
        parts = [_flatten_points(v) for v in values]
        inner = parts[0][0]
        if any(s != inner for s, _ in parts):
            raise ValueError("ragged nested lists of points")
        return (len(values),) + inner, [x for _, f in parts for x in f]
    if values is None or isinstance(values, tuple):
        return (), [values]
    raise TypeError(f"a point is None or a tuple; got {type(values).__name__}")


class PointTensor:
    """Points of one group in XYZZ coordinates; arithmetic is compiled."""

    __slots__ = ("G", "data")

    def __init__(self, G: GroupSpace, data: torch.Tensor):
        if data.dtype != torch.int32 or data.dim() < 2 or data.shape[:2] != (G.L, G.K):
            raise ValueError(f"{G.name}: point data must be int32 of shape ({G.L}, {G.K}, ...)")
        self.G, self.data = G, data

    # -- shape ---------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        return self.data.shape[2:]

    @property
    def device(self):
        return self.data.device

    def numel(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d PointTensor")
        return self.shape[0]

    def __getitem__(self, idx) -> "PointTensor":
        idx = idx if isinstance(idx, tuple) else (idx,)
        return PointTensor(self.G, self.data[(slice(None), slice(None)) + idx])

    def __setitem__(self, idx, value: "PointTensor"):
        idx = idx if isinstance(idx, tuple) else (idx,)
        self._same(value)
        tgt = self.data[(slice(None), slice(None)) + idx]
        tgt.copy_(_align(value.data, tgt.shape[2:]))

    def reshape(self, *shape) -> "PointTensor":
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return PointTensor(self.G, self.data.reshape((self.G.L, self.G.K) + tuple(shape)))

    def contiguous(self) -> "PointTensor":
        return PointTensor(self.G, self.data.contiguous())

    def clone(self) -> "PointTensor":
        return PointTensor(self.G, self.data.clone())

    def to(self, device) -> "PointTensor":
        return PointTensor(self.G, self.data.to(device))

    def __repr__(self):
        n = self.numel()
        body = self.to_affine() if n <= 4 else f"<{n} points>"
        return f"PointTensor({self.G.name}, shape={tuple(self.shape)}, {body})"

    def _same(self, other) -> "PointTensor":
        if not isinstance(other, PointTensor):
            raise TypeError(f"expected a PointTensor, got {type(other).__name__}")
        if other.G != self.G:
            raise TypeError(f"cannot mix {self.G.name} and {other.G.name} points")
        return other

    def _flat(self) -> torch.Tensor:
        return self.data.reshape(self.G.L, self.G.K, -1)

    # -- predicates --------------------------------------------------------------
    def is_identity(self) -> torch.Tensor:
        d = self.G.degree
        return is_zero(self.data[:, 2 * d:3 * d])

    def __eq__(self, other) -> torch.Tensor:
        other = self._same(other)
        A, B, batch = _broadcast(self, other)
        h, r = cross(self.G, A, B)
        ia, ib = is_id(self.G, A), is_id(self.G, B)
        same = is_zero(h) & is_zero(r) & ~ia & ~ib
        return (same | (ia & ib)).reshape(batch)

    def __ne__(self, other):
        return ~(self == other)

    __hash__ = None

    # -- conversion out --------------------------------------------------------
    def affine(self):
        """(xy, inf): Montgomery affine coordinates (L, 2·degree, *batch) and the identity mask."""
        xy, inf = affine(self.G, self._flat())
        return xy.reshape((self.G.L, 2 * self.G.degree) + tuple(self.shape)), inf.reshape(self.shape)

    def to_affine(self):
        """Affine points as Python ints (nested lists for a batch), None for the identity."""
        G = self.G
        m = self.numel()
        if self.data.device.type == "cpu" and 0 < m <= HOST_AFFINE_UPTO:
            out = to_host(G, self._flat())
            return out[0] if not self.shape else _unflatten(out, tuple(self.shape))
        xy, inf = self.affine()
        vals = FieldTensor(G.F, xy.reshape(G.L, 2 * G.degree * m) if m else
                           torch.zeros((G.L, 0), dtype=torch.int32)).to_ints() if m else []
        out = []
        d = G.degree
        infl = inf.reshape(-1).tolist()
        for i in range(m):
            if infl[i]:
                out.append(None)
                continue
            c = [vals[k * m + i] for k in range(2 * d)]
            out.append((c[0], c[1]) if d == 1 else ((c[0], c[1]), (c[2], c[3])))
        return out[0] if not self.shape else _unflatten(out, tuple(self.shape))

    def to_bytes(self) -> bytes:
        """snarkjs's layout (see GroupSpace.from_bytes), points in row-major order."""
        G = self.G
        xy, inf = self.affine()
        m = self.numel()
        words = xy.reshape(G.L, 2 * G.degree, m).permute(2, 1, 0).contiguous().cpu()
        return words.numpy().view(np.uint8).tobytes()

    # -- arithmetic ----------------------------------------------------------------
    def __neg__(self) -> "PointTensor":
        return PointTensor(self.G, neg(self.G, self._flat()).reshape(self.data.shape))

    def __add__(self, other) -> "PointTensor":
        other = self._same(other)
        A, B, batch = _broadcast(self, other)
        return PointTensor(self.G, add_complete(self.G, A, B).reshape((self.G.L, self.G.K) + batch))

    def __sub__(self, other) -> "PointTensor":
        return self + (-self._same(other))

    def double(self, times: int = 1) -> "PointTensor":
        """2^times · P (XYZZ doubling is complete: the identity and 2-torsion go to O)."""
        if times < 0:
            raise ValueError("times must be >= 0")
        return PointTensor(self.G, double_n(self.G, self._flat(), times).reshape(self.data.shape))

    def __mul__(self, k) -> "PointTensor":
        return scalar_mul(self, k)

    __rmul__ = __mul__

    def sum(self) -> "PointTensor":
        """The sum of all points (a 0-d PointTensor), by a tree of batched additions."""
        flat = self._flat()
        G = self.G
        if flat.shape[2] == 0:
            return G.identity(device=self.device)
        while flat.shape[2] > 1:
            m = flat.shape[2]
            half = m // 2
            s = add_complete(G, flat[:, :, :half], flat[:, :, half:2 * half])
            flat = torch.cat([s, flat[:, :, 2 * half:]], dim=2) if m % 2 else s
        return PointTensor(G, flat.reshape(G.L, G.K))

    def in_subgroup(self) -> torch.Tensor:
        """r·P = O elementwise (every point of a prime-order group with cofactor 1 is)."""
        return (self * self.G.r).is_identity()


# -- batched complete operations on flat data (L, K, m) -------------------------------------


def _broadcast(A: PointTensor, B: PointTensor):
    batch = broadcast_shapes(A.shape, B.shape)
    a = _align(A.data, batch).reshape(A.G.L, A.G.K, -1)
    b = _align(B.data, batch).reshape(B.G.L, B.G.K, -1)
    return a, b, batch


def _align(data, batch):
    extra = len(batch) - (data.dim() - 2)
    data = data.reshape(data.shape[:2] + (1,) * extra + tuple(data.shape[2:]))
    return data.expand(data.shape[:2] + tuple(batch))


def scalar_mul(P: PointTensor, k) -> PointTensor:
    """k·P elementwise by left-to-right double-and-add; k an int (any sign, not reduced),
    a sequence of ints or a FieldTensor of the scalar field, broadcast against P."""
    G = P.G
    if isinstance(k, FieldTensor):
        if k.F != G.Fr:
            raise TypeError(f"{G.name}: scalars must be {G.Fr.name} elements, got {k.F.name}")
        words = from_mont(k.F, k.data)
        kshape = tuple(k.shape)
        bits, neg = _word_bits(words.reshape(k.F.limbs, -1)), None
    elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        k = int(k)
        if k < 0:
            return scalar_mul(-P, -k)
        kshape = ()
        nb = max(k.bit_length(), 1)
        bits = torch.tensor([[(k >> (nb - 1 - i)) & 1 for i in range(nb)]], dtype=torch.bool)
        neg = None
    elif isinstance(k, (list, tuple)):
        shape, flat = _flatten(list(k))
        for v in flat:
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError("scalars must be ints")
        kshape = shape
        nb = max([abs(int(v)).bit_length() for v in flat] + [1])
        bits = torch.tensor([[(abs(int(v)) >> (nb - 1 - i)) & 1 for i in range(nb)] for v in flat],
                            dtype=torch.bool).reshape(len(flat), nb)
        neg = torch.tensor([int(v) < 0 for v in flat], dtype=torch.bool)
    else:
        raise TypeError(f"cannot multiply points by {type(k).__name__}")
    batch = broadcast_shapes(tuple(P.shape), kshape)
    base = _align(P.data, batch).reshape(G.L, G.K, -1).contiguous()
    m = base.shape[2]
    nk = bits.shape[0]
    bits = bits.to(P.device)
    if nk != 1:
        bits = bits.reshape(kshape + (bits.shape[1],))
        bits = bits.expand(batch + (bits.shape[-1],)).reshape(m, -1)
    if neg is not None and bool(neg.any()):
        negm = neg.to(P.device).reshape(kshape).expand(batch).reshape(m)
        nb_ = (-PointTensor(G, base)).data
        base = torch.where(negm.reshape(1, 1, m), nb_, base)
    if m <= _WINDOWED_MAX and bits.shape[1] > 2 * _WINDOW:
        R = _windowed(G, base, bits)
    else:
        R = G.identity((m,), device=P.device).data
        for i in range(bits.shape[1]):
            R = double_n(G, R, 1)
            col = bits[:, i]
            if not bool(col.any()):
                continue
            S = add_complete(G, R, base)
            R = torch.where(col.reshape(1, 1, -1), S, R) if col.numel() > 1 else S
    return PointTensor(G, R.reshape((G.L, G.K) + batch))


# Few points with long scalars (the prover's blinding terms): a fixed 4-bit window cuts
# the kernel launches ~3.5x (254-bit: 14 table additions + 63 fused 4-doublings + 64
# additions, against 254 doublings + ~254 additions); launches, not arithmetic, are the
# cost there. Many points keep the bit loop (the table would cost 16x their memory).
_WINDOW = 4
_WINDOWED_MAX = 1 << 10


def _windowed(G, base: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
    """Σ_t 16^(n-1-t)·d_t·P per column: digits d_t of the bits (most significant first),
    T[d] = d·P gathered per column; complete additions, so T[0] = O needs no case."""
    m, w = base.shape[2], _WINDOW
    bits = bits.expand(m, -1)                    # one scalar for every column
    pad = (-bits.shape[1]) % w
    if pad:
        bits = torch.cat([torch.zeros(m, pad, dtype=torch.bool, device=bits.device), bits], dim=1)
    weights = torch.tensor([1 << (w - 1 - b) for b in range(w)], dtype=torch.int64, device=bits.device)
    digits = (bits.reshape(m, -1, w).to(torch.int64) * weights).sum(-1)          # (m, n)
    table = [G.identity((m,), device=base.device).data, base]
    for _ in range(2, 1 << w):
        table.append(add_complete(G, table[-1], base))
    table = torch.stack(table, dim=2)                                            # (L, K, 16, m)
    cols = torch.arange(m, device=base.device)
    R = None
    for t in range(digits.shape[1]):
        if R is not None:
            R = double_n(G, R, w)
        S = table[:, :, digits[:, t], cols]
        R = S.contiguous() if R is None else add_complete(G, R, S)
    return R


def _word_bits(words: torch.Tensor) -> torch.Tensor:
    """(m, 32·L) bits, most significant first, of standard-form words (L, m)."""
    w = words.to(torch.int64) & 0xFFFFFFFF
    L = w.shape[0]
    shifts = torch.arange(31, -1, -1, dtype=torch.int64, device=w.device)
    bits = ((w.flip(0).unsqueeze(-1) >> shifts) & 1).permute(1, 0, 2).reshape(w.shape[1], 32 * L)
    # drop leading all-zero columns
    nz = torch.nonzero(bits.any(dim=0))
    start = int(nz[0]) if len(nz) else bits.shape[1] - 1
    return bits[:, start:].to(torch.bool)


_spaces: dict[str, GroupSpace] = {}


def group(name: str) -> GroupSpace:
    """The group named like "bn254.g1", "bls12_381.g2", "mnt4753.g1"."""
    rec = group_record(name)
    return _spaces.setdefault(rec.name, GroupSpace(rec))


def cat(points, dim: int = 0) -> PointTensor:
    points = list(points)
    if not points:
        raise ValueError("cat() needs at least one PointTensor")
    G = points[0].G
    for p in points:
        points[0]._same(p)
    nd = len(points[0].shape)
    return PointTensor(G, torch.cat([p.data for p in points], dim=(dim % nd) + 2))
