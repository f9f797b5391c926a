"""Quadratic extension fields as data: Fq2 = Fq[u] / (u^2 - beta).

One record per extension holds what cannot be derived: its base field, the
quadratic non-residue ``beta`` (u^2 = beta) and the sextic non-residue ``xi``
in Fq2 that defines both Fq6 = Fq2[v] / (v^3 - xi) and the sextic twist that
carries G2. Both are checked when the record is built (beta is not a square in
Fq; xi is neither a square nor a cube in Fq2, as a sextic twist requires).

An element of Fq2 is the pair ``(c0, c1)`` meaning c0 + c1·u, with Python ints
in [0, q). That is also the order in which snarkjs stores the two halves.

The arithmetic below is slow, plain Python-int reference code for computing
constants (G2 curve coefficients, checks on generators); it is not a fast path
and tests of fast paths compare against ``tests/oracles``, not against this.

MNT4-753's Fq2 (beta = 13) is not here: its G2 is out of scope.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from .fields import field

Fq2Elem = tuple[int, int]

# The only numbers pasted: the non-residues, with where they come from.
_TOWERS = {
    # BN254 (EIP-197; py_ecc.bn128 FQ2 modulus u^2 + 1, FQ12 modulus w^12 - 18 w^6 + 82,
    # i.e. w^6 = 9 + u).
    "bn254.fq2": ("bn254.fq", -1, (9, 1)),
    # BLS12-381 (IETF pairing-friendly-curves draft; py_ecc.bls12_381 FQ2 modulus
    # u^2 + 1, FQ12 modulus w^12 - 2 w^6 + 2, i.e. w^6 = 1 + u).
    "bls12_381.fq2": ("bls12_381.fq", -1, (1, 1)),
}


def fq_sqrt(a: int, p: int) -> int | None:
    """A square root of ``a`` mod the prime ``p``, or None when ``a`` is not a square."""
    a %= p
    if a == 0:
        return 0
    if pow(a, (p - 1) // 2, p) != 1:
        return None
    if p % 4 == 3:
        s = pow(a, (p + 1) // 4, p)
    else:
        from sympy.ntheory import sqrt_mod      # imported only here: sympy is slow to import
        s = sqrt_mod(a, p)
    assert s * s % p == a
    return s


@dataclass(frozen=True)
class Fq2:
    """Fq2 = Fq[u] / (u^2 - beta), with the sextic non-residue xi used by Fq6 and the G2 twist."""

    name: str
    base: str            # base field name, e.g. "bn254.fq"
    beta: int            # u^2 = beta, as a small signed integer (-1 here)
    xi: Fq2Elem          # Fq6 = Fq2[v] / (v^3 - xi); G2 is a sextic twist by xi

    def __post_init__(self):
        p = self.p
        if pow(self.beta % p, (p - 1) // 2, p) != p - 1:
            raise ValueError(f"{self.name}: beta = {self.beta} is a square in {self.base}")
        n = p * p - 1
        if self.pow(self.xi, n // 2) == self.one or self.pow(self.xi, n // 3) == self.one:
            raise ValueError(f"{self.name}: xi = {self.xi} is a square or a cube in Fq2")

    # -- the base field -------------------------------------------------------
    @property
    def p(self) -> int:
        return field(self.base).p

    @property
    def zero(self) -> Fq2Elem:
        return (0, 0)

    @property
    def one(self) -> Fq2Elem:
        return (1, 0)

    def elem(self, c0: int, c1: int = 0) -> Fq2Elem:
        """c0 + c1·u, reduced into [0, q)."""
        return (c0 % self.p, c1 % self.p)

    # -- arithmetic (plain formulas) ------------------------------------------
    def add(self, a: Fq2Elem, b: Fq2Elem) -> Fq2Elem:
        return self.elem(a[0] + b[0], a[1] + b[1])

    def sub(self, a: Fq2Elem, b: Fq2Elem) -> Fq2Elem:
        return self.elem(a[0] - b[0], a[1] - b[1])

    def neg(self, a: Fq2Elem) -> Fq2Elem:
        return self.elem(-a[0], -a[1])

    def mul(self, a: Fq2Elem, b: Fq2Elem) -> Fq2Elem:
        # (a0 + a1 u)(b0 + b1 u) = a0 b0 + beta a1 b1 + (a0 b1 + a1 b0) u
        return self.elem(a[0] * b[0] + self.beta * a[1] * b[1], a[0] * b[1] + a[1] * b[0])

    def scale(self, a: Fq2Elem, k: int) -> Fq2Elem:
        """a · k for k in Fq."""
        return self.elem(a[0] * k, a[1] * k)

    def conj(self, a: Fq2Elem) -> Fq2Elem:
        return self.elem(a[0], -a[1])

    def norm(self, a: Fq2Elem) -> int:
        """a · conj(a) = a0^2 - beta a1^2, an element of Fq."""
        return (a[0] * a[0] - self.beta * a[1] * a[1]) % self.p

    def inv(self, a: Fq2Elem) -> Fq2Elem:
        n = self.norm(a)
        if n == 0:
            raise ZeroDivisionError(f"{self.name}: inverse of zero")
        return self.scale(self.conj(a), pow(n, -1, self.p))

    def div(self, a: Fq2Elem, b: Fq2Elem) -> Fq2Elem:
        return self.mul(a, self.inv(b))

    def pow(self, a: Fq2Elem, e: int) -> Fq2Elem:
        if e < 0:
            return self.pow(self.inv(a), -e)
        result, base = self.one, self.elem(*a)
        while e:
            if e & 1:
                result = self.mul(result, base)
            base = self.mul(base, base)
            e >>= 1
        return result

    def is_square(self, a: Fq2Elem) -> bool:
        """a is a square in Fq2 iff its norm is a square in Fq."""
        n = self.norm(a)
        return n == 0 or pow(n, (self.p - 1) // 2, self.p) == 1

    def sqrt(self, a: Fq2Elem) -> Fq2Elem | None:
        """A square root of ``a`` in Fq2, or None. Via the norm: if x^2 = a then
        x0^2 = (a0 ± sqrt(norm a)) / 2 and x1 = a1 / (2 x0)."""
        p = self.p
        a = self.elem(*a)
        if not self.is_square(a):
            return None
        if a[1] == 0:
            s = fq_sqrt(a[0], p)
            if s is not None:
                root = (s, 0)
            else:  # a0 = beta · c^2: (c u)^2 = beta c^2
                root = (0, fq_sqrt(a[0] * pow(self.beta, -1, p), p))
        else:
            s = fq_sqrt(self.norm(a), p)
            half = pow(2, -1, p)
            x0 = fq_sqrt((a[0] + s) * half, p)
            if x0 is None:
                x0 = fq_sqrt((a[0] - s) * half, p)
            root = self.elem(x0, a[1] * pow(2 * x0, -1, p))
        assert self.mul(root, root) == a, f"{self.name}: sqrt failed"
        return root

    def __repr__(self) -> str:
        return f"Fq2({self.name}: {self.base}[u]/(u^2 - ({self.beta})), xi = {self.xi[0]} + {self.xi[1]}u)"


@functools.lru_cache(maxsize=None)
def tower(name: str) -> Fq2:
    """The Fq2 record named like ``"bn254.fq2"`` or ``"bls12_381.fq2"``."""
    key = name.lower().replace("-", "_").replace("bls12381", "bls12_381").replace("bn128", "bn254")
    if key not in _TOWERS:
        raise ValueError(f"unknown extension field {name!r}; known: {', '.join(sorted(_TOWERS))}")
    base, beta, xi = _TOWERS[key]
    return Fq2(key, base, beta, xi)


TOWER_NAMES = tuple(sorted(_TOWERS))
