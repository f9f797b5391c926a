"""Curve points <-> the bytes snarkjs stores in a ``.zkey`` ("LEM" form).

A G1 point is x then y, a G2 point x0, x1, y0, y1 (coordinate c0 + c1·u); each
coordinate is n8q little-endian bytes in Montgomery form, x·R mod q with
R = 2^(8·n8q): 2^256 for BN254, 2^384 for BLS12-381. The point at infinity is
stored as all zeros (an affine (0, 0), which is on neither curve).

Python-side points are affine tuples of ints, ``None`` for infinity, as in
``zktensor.algebra.curves``: G1 ``(x, y)``, G2 ``((x0, x1), (y0, y1))``.
"""
from __future__ import annotations

import functools

from zktensor.algebra.curves import group, is_on_curve

from .curves import n8_of, q_of


class PointCodec:
    """Encode/decode one group's points for one curve."""

    def __init__(self, curve: str, which: str):
        self.curve = curve
        self.which = which  # "g1" | "g2"
        self.group = group(f"{curve}.{which}")
        self.q = q_of(curve)
        self.n8 = n8_of(self.q)
        self.degree = 1 if which == "g1" else 2
        self.size = 2 * self.degree * self.n8  # bytes per point
        self.R = pow(2, 8 * self.n8, self.q)
        self.R_inv = pow(self.R, -1, self.q)

    # -- one coordinate ---------------------------------------------------------
    def _coords(self, buf, off: int) -> list[int]:
        n8 = self.n8
        return [int.from_bytes(buf[off + i * n8:off + (i + 1) * n8], "little")
                for i in range(2 * self.degree)]

    def decode(self, buf, off: int = 0, *, check: bool = True, where: str = "point"):
        """The point stored at ``buf[off:off+size]``. With ``check``, a coordinate >= q
        or a point off the curve raises ValueError (the caller adds the file name)."""
        raw = self._coords(buf, off)
        if not any(raw):
            return None
        q, R_inv = self.q, self.R_inv
        if check and any(c >= q for c in raw):
            raise ValueError(f"{where}: coordinate not reduced modulo q")
        c = [v * R_inv % q for v in raw]
        P = (c[0], c[1]) if self.degree == 1 else ((c[0], c[1]), (c[2], c[3]))
        if check and not is_on_curve(self.group, P):
            raise ValueError(f"{where}: {self.curve} {self.which.upper()} point not on the curve")
        return P

    def decode_all(self, buf, count: int, *, check: bool = True, what: str = "point"):
        return [self.decode(buf, i * self.size, check=check, where=f"{what} {i}")
                for i in range(count)]

    def encode(self, P) -> bytes:
        if P is None:
            return bytes(self.size)
        coords = P if self.degree == 1 else (*P[0], *P[1])
        q, R, n8 = self.q, self.R, self.n8
        if not all(0 <= c < q for c in coords):
            raise ValueError(f"{self.curve} {self.which.upper()} point {P!r}: coordinate not in [0, q)")
        return b"".join((c * R % q).to_bytes(n8, "little") for c in coords)

    def encode_all(self, points) -> bytes:
        return b"".join(self.encode(P) for P in points)


@functools.lru_cache(maxsize=None)
def codec(curve: str, which: str) -> PointCodec:
    return PointCodec(curve, which)
