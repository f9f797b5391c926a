"""The optimal ate pairing of BN254 and BLS12-381, on Python ints.

What it computes. e(P, Q) = FE(f_Q(P)) for P in G1 (over Fq) and Q in G2 (on the
sextic twist, over Fq2): the Miller loop f of the optimal ate pairing
(Vercauteren, "Optimal pairings", 2010), then the final exponentiation FE to
m·(p^12 - 1)/r. ``pairing_check`` answers whether a product of pairings is 1,
which is all a Groth16 verifier asks and which any fixed power m coprime to r
answers the same. The values themselves:

* BN254: m = 1, the same value as py_ecc's pairing (tests compare them);
* BLS12-381: m = 3 and the loop conjugates for the negative seed (py_ecc's does
  not), so the value is py_ecc's to the power -3, the value snarkjs prints.

The tower (ffjavascript's; `groth16.formats.gt` gives snarkjs's layout of its values):
Fq2 = Fq[u]/(u^2 + 1), Fq6 = Fq2[v]/(v^3 - xi), Fq12 = Fq6[w]/(w^2 - v), with
xi = 9 + u (BN254) or 1 + u (BLS12-381) from ``zktensor.algebra.towers``. An
element is nested tuples of ints: Fq2 (c0, c1) = c0 + c1·u, Fq6 (a0, a1, a2) =
a0 + a1·v + a2·v^2, Fq12 (g0, g1) = g0 + g1·w. So w^6 = xi, and the coefficient
of v^j·w^i sits at ``f[i][j]``.

The Miller loop. G2 lives on y^2 = x^3 + b' over Fq2 (b' = b/xi, D-type twist,
for BN254; b' = b·xi, M-type, for BLS12-381; from ``zktensor.algebra.curves``).
The running point stays on the twist in homogeneous projective coordinates
(X : Y : Z), so no step inverts; each doubling or addition gives a line whose
value at P has three non-zero Fq2 coefficients out of six, multiplied into f
sparsely. The loop runs over the non-adjacent form of 6x + 2 (BN254; then two
more lines, through pi(Q) and -pi^2(Q), pi the p-power Frobenius on the twist)
or of |x| (BLS12-381; then f is conjugated because x < 0), x the family's seed.
``miller_loop`` shares the squarings of f across all pairs; a fixed G2 point's lines
(``prepare_g2``) are computed once and only scaled at each P.

The final exponentiation. The easy part f^((p^6 - 1)(p^2 + 1)) costs one
inversion; it lands in the cyclotomic subgroup, where inverting is conjugating
and squaring has a cheaper formula (Granger and Scott 2010). The hard part
(p^4 - p^2 + 1)/r is written, as polynomials in the seed x, in base p:
d(x) = lambda_0(x) + lambda_1(x)·p(x) + lambda_2(x)·p(x)^2 + lambda_3(x)·p(x)^3,
whose coefficients are small (times m = 3 to make them integers for BLS12); so
f^d costs a few exponentiations by x (64 bits) and Frobenius maps. All of it,
like the Frobenius constants and the seed, is derived here from the curve
records (the family polynomials p(x), r(x) from ``curves.FAMILY_POLYNOMIALS``).

Additions do not reduce mod p, only products do: each value stays a small multiple of p (a bounded sum of reduced
products), and a reduction costs as much as a product.

Membership in G2: ``g2_in_subgroup`` tests psi(Q) = [t - 1]Q, half or a quarter of the
bits of r·Q = O.

Why it exists: py_ecc represents Fq12 as Fq[w] modulo a degree-12 polynomial
(144 products per multiplication); the tower needs far fewer products per Fq12
multiplication. The verifier runs the same steps compiled (``kernels.pairing_cpu``,
which schedules them from ``pairing_curve``'s record); this module is its oracle and its
fallback where nothing can be compiled.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

from .curves import FAMILY_POLYNOMIALS, family as curve_family, group, is_on_curve, lincomb
from .towers import tower

# -- Fq2: additions and subtractions need no p (they do not reduce) -------------------


def _add2(a, b):
    return (a[0] + b[0], a[1] + b[1])


def _sub2(a, b):
    return (a[0] - b[0], a[1] - b[1])


def _add6(a, b):
    return (_add2(a[0], b[0]), _add2(a[1], b[1]), _add2(a[2], b[2]))


def _sub6(a, b):
    return (_sub2(a[0], b[0]), _sub2(a[1], b[1]), _sub2(a[2], b[2]))


def _neg6(a):
    return tuple((-c0, -c1) for c0, c1 in a)


def _conj2(a):
    return (a[0], -a[1])


class Tower:
    """Fq2, Fq6 and Fq12 over the prime p with the non-residue xi (see the module doc).

    Methods are named by level: ``mul2`` multiplies in Fq2, ``mul6`` in Fq6,
    ``mul12`` in Fq12. Results of products are reduced mod p coefficient-wise;
    ``reduce12`` normalises a value for comparison."""

    def __init__(self, p: int, xi: tuple[int, int]):
        if p % 6 != 1:
            raise ValueError("the Frobenius constants xi^((p^k - 1)/6) need p = 1 mod 6")
        self.p, self.xi = p, xi
        zero2 = (0, 0)
        self.one = (((1, 0), zero2, zero2), (zero2, zero2, zero2))
        # Frob^k(w^n) = w^(n·p^k) = w^n · xi^(n(p^k - 1)/6), as w^6 = xi.
        # (one exponentiation per k: gamma[k][n] = gamma[k][1]^n)
        self.gamma = {}
        for k in (1, 2, 3):
            g1 = self.pow2(xi, (p**k - 1) // 6)
            powers = [(1, 0)]
            for _ in range(5):
                powers.append(self.mul2(powers[-1], g1))
            self.gamma[k] = tuple(powers)

    # -- Fq2 ------------------------------------------------------------------------

    def mul2(self, a, b):
        # Schoolbook: in CPython four products of these ints cost less than
        # Karatsuba's three and its three extra additions.
        p = self.p
        a0, a1 = a
        b0, b1 = b
        return ((a0 * b0 - a1 * b1) % p, (a0 * b1 + a1 * b0) % p)

    def sqr2(self, a):
        p = self.p
        a0, a1 = a
        return ((a0 + a1) * (a0 - a1) % p, 2 * a0 * a1 % p)

    def scale2(self, a, k: int):
        """a·k for k in Fq."""
        p = self.p
        return (a[0] * k % p, a[1] * k % p)

    def mul_xi(self, a):
        """a·xi, unreduced: xi's coefficients are small."""
        x0, x1 = self.xi
        a0, a1 = a
        return (x0 * a0 - x1 * a1, x0 * a1 + x1 * a0)

    def inv2(self, a):
        p = self.p
        a0, a1 = a
        n = pow((a0 * a0 + a1 * a1) % p, -1, p)  # 1 / (a·conj(a)), the norm in Fq
        return (a0 * n % p, -a1 * n % p)

    def pow2(self, a, e: int):
        if e < 0:
            return self.pow2(self.inv2(a), -e)
        result = (1, 0)
        for bit in bin(e)[2:]:
            result = self.sqr2(result)
            if bit == "1":
                result = self.mul2(result, a)
        return result

    # -- Fq6 ------------------------------------------------------------------------

    def mul6(self, a, b):
        """Karatsuba over Fq2: 6 Fq2 products instead of 9 (Devegili, Ó hÉigeartaigh,
        Scott and Dahab, "Multiplication and squaring on pairing-friendly fields", 2006)."""
        mul2, mul_xi = self.mul2, self.mul_xi
        a0, a1, a2 = a
        b0, b1, b2 = b
        t0, t1, t2 = mul2(a0, b0), mul2(a1, b1), mul2(a2, b2)
        s12 = mul2(_add2(a1, a2), _add2(b1, b2))
        s01 = mul2(_add2(a0, a1), _add2(b0, b1))
        s02 = mul2(_add2(a0, a2), _add2(b0, b2))
        return (_add2(t0, mul_xi(_sub2(s12, _add2(t1, t2)))),
                _add2(_sub2(s01, _add2(t0, t1)), mul_xi(t2)),
                _add2(_sub2(s02, _add2(t0, t2)), t1))

    def mul6_by_v(self, a):
        """a·v: the coefficients shift up and v^3 = xi wraps the top one."""
        return (self.mul_xi(a[2]), a[0], a[1])

    def mul6_by_2(self, a, b):
        """a·b for b in Fq2."""
        mul2 = self.mul2
        return (mul2(a[0], b), mul2(a[1], b), mul2(a[2], b))

    def mul6_by_01(self, a, b0, b1):
        """a·(b0 + b1·v): Karatsuba with b2 = 0, 5 Fq2 products."""
        mul2 = self.mul2
        a0, a1, a2 = a
        t0, t1 = mul2(a0, b0), mul2(a1, b1)
        return (_add2(t0, self.mul_xi(_sub2(mul2(_add2(a1, a2), b1), t1))),
                _sub2(mul2(_add2(a0, a1), _add2(b0, b1)), _add2(t0, t1)),
                _add2(_sub2(mul2(_add2(a0, a2), b0), t0), t1))

    def mul6_by_1(self, a, b1):
        """a·(b1·v)."""
        mul2 = self.mul2
        return (self.mul_xi(mul2(a[2], b1)), mul2(a[0], b1), mul2(a[1], b1))

    def inv6(self, a):
        """1/a by the adjugate: a·(A + B·v + C·v^2) = F in Fq2."""
        mul2, sqr2, mul_xi = self.mul2, self.sqr2, self.mul_xi
        a0, a1, a2 = a
        A = _sub2(sqr2(a0), mul_xi(mul2(a1, a2)))
        B = _sub2(mul_xi(sqr2(a2)), mul2(a0, a1))
        C = _sub2(sqr2(a1), mul2(a0, a2))
        F = _add2(mul2(a0, A), mul_xi(_add2(mul2(a2, B), mul2(a1, C))))
        return self.mul6_by_2((A, B, C), self.inv2(F))

    # -- Fq12 -----------------------------------------------------------------------

    def mul12(self, a, b):
        """Karatsuba over Fq6: 3 Fq6 products."""
        mul6 = self.mul6
        a0, a1 = a
        b0, b1 = b
        t0, t1 = mul6(a0, b0), mul6(a1, b1)
        return (_add6(t0, self.mul6_by_v(t1)),
                _sub6(mul6(_add6(a0, a1), _add6(b0, b1)), _add6(t0, t1)))

    def sqr12(self, a):
        """The complex method: (a0 + a1 w)^2 = (a0 + a1)(a0 + v a1) - t - v t + 2t·w,
        t = a0·a1; 2 Fq6 products."""
        a0, a1 = a
        t = self.mul6(a0, a1)
        vt = self.mul6_by_v(t)
        c0 = self.mul6(_add6(a0, a1), _add6(a0, self.mul6_by_v(a1)))
        return (_sub6(c0, _add6(t, vt)), _add6(t, t))

    def conj12(self, a):
        """a^(p^6): w^(p^6) = -w. On the cyclotomic subgroup, the inverse."""
        return (a[0], _neg6(a[1]))

    def inv12(self, a):
        a0, a1 = a
        mul6 = self.mul6
        t = self.inv6(_sub6(mul6(a0, a0), self.mul6_by_v(mul6(a1, a1))))  # 1 / norm to Fq6
        return (mul6(a0, t), _neg6(mul6(a1, t)))

    def frobenius(self, a, k: int):
        """a^(p^k), k in 1..3: conjugate each Fq2 coefficient k times (u^p = -u) and
        multiply the coefficient of w^n by gamma[k][n]."""
        g, mul2 = self.gamma[k], self.mul2
        (a00, a01, a02), (a10, a11, a12) = a
        if k % 2:
            a00, a01, a02, a10, a11, a12 = map(_conj2, (a00, a01, a02, a10, a11, a12))
        # f[i][j] is the coefficient of v^j w^i = w^(2j + i)
        return ((a00, mul2(a01, g[2]), mul2(a02, g[4])),
                (mul2(a10, g[1]), mul2(a11, g[3]), mul2(a12, g[5])))

    def _sqr4(self, x0, x1):
        """(x0 + x1·s)^2 in Fq4 = Fq2[s]/(s^2 - xi), 3 Fq2 squarings."""
        t0, t1 = self.sqr2(x0), self.sqr2(x1)
        return _add2(t0, self.mul_xi(t1)), _sub2(self.sqr2(_add2(x0, x1)), _add2(t0, t1))

    def cyclotomic_sqr(self, a):
        """a^2 for a in the cyclotomic subgroup (a^(p^4 - p^2 + 1) = 1), Granger and Scott,
        "Faster squaring in the cyclotomic subgroup of sixth degree extensions", 2010.

        Over Fq4 = Fq2(s), s = w^3, a = A + B·w + C·w^2 with A = g0 + g3 s,
        B = g1 + g4 s, C = g2 + g5 s (g_n the coefficient of w^n), and
        a^2 = (3A^2 - 2 conj A) + (3 s C^2 + 2 conj B) w + (3B^2 - 2 conj C) w^2.
        9 Fq2 squarings instead of 12 products; the 3·x - 2·y terms would let the
        size of the coefficients double at each call, so they are reduced."""
        p, sqr4 = self.p, self._sqr4
        (g0, g2, g4), (g1, g3, g5) = a
        A0, A1 = sqr4(g0, g3)
        B0, B1 = sqr4(g1, g4)
        C0, C1 = sqr4(g2, g5)
        sC1 = self.mul_xi(C1)  # s·(C0 + C1 s) = xi C1 + C0 s

        def lin(t, g, sign):  # 3t + sign·2g, reduced
            return ((3 * t[0] + sign * 2 * g[0]) % p, (3 * t[1] + sign * 2 * g[1]) % p)

        n0, n3 = lin(A0, g0, -1), lin(A1, g3, 1)
        n1, n4 = lin(sC1, g1, 1), lin(C0, g4, -1)
        n2, n5 = lin(B0, g2, -1), lin(B1, g5, 1)
        return ((n0, n2, n4), (n1, n3, n5))

    def mul_by_line_d(self, f, ly, lx, lc):
        """f·(ly + lx·w + lc·w^3), a D-type twist's line: 13 Fq2 products instead of 18."""
        f0, f1 = f
        t0 = self.mul6_by_2(f0, ly)
        t1 = self.mul6_by_01(f1, lx, lc)
        return (_add6(t0, self.mul6_by_v(t1)),
                _sub6(self.mul6_by_01(_add6(f0, f1), _add2(ly, lx), lc), _add6(t0, t1)))

    def mul_by_line_m(self, f, ly, lx, lc):
        """f·(lc + lx·w^2 + ly·w^3), an M-type twist's line: 13 Fq2 products."""
        f0, f1 = f
        t0 = self.mul6_by_01(f0, lc, lx)
        t1 = self.mul6_by_1(f1, ly)
        return (_add6(t0, self.mul6_by_v(t1)),
                _sub6(self.mul6_by_01(_add6(f0, f1), lc, _add2(lx, ly)), _add6(t0, t1)))

    def pow12(self, a, e: int):
        """a^e (any e; a negative e inverts). Plain square-and-multiply, for tests and
        constants, not for the pairing."""
        if e < 0:
            return self.pow12(self.inv12(a), -e)
        result = self.one
        for bit in bin(e)[2:]:
            result = self.sqr12(result)
            if bit == "1":
                result = self.mul12(result, a)
        return self.reduce12(result)

    def reduce12(self, a):
        """The canonical form of a: every coefficient in [0, p)."""
        p = self.p
        return tuple(tuple((c0 % p, c1 % p) for c0, c1 in half) for half in a)


# -- the families: polynomials in the seed x --------------------------------------------
# Polynomials are lists of Fractions, lowest degree first.


def _ptrim(a):
    a = list(a)
    while a and a[-1] == 0:
        a.pop()
    return a


def _padd(a, b):
    n = max(len(a), len(b))
    return _ptrim((a[i] if i < len(a) else 0) + (b[i] if i < len(b) else 0) for i in range(n))


def _pscale(a, k):
    return _ptrim(c * k for c in a)


def _pmul(a, b):
    out = [Fraction(0)] * (len(a) + len(b) - 1) if a and b else []
    for i, ai in enumerate(a):
        for j, bj in enumerate(b):
            out[i + j] += ai * bj
    return _ptrim(out)


def _pdivmod(a, b):
    q, rem = [Fraction(0)] * max(len(a) - len(b) + 1, 0), list(a)
    while len(rem) >= len(b):
        c, shift = rem[-1] / b[-1], len(rem) - len(b)
        q[shift] = c
        rem = _padd(rem, _pscale([0] * shift + b, -c))
    return _ptrim(q), rem


def _poly(*coeffs):
    return _ptrim(Fraction(c) for c in coeffs)


def _family_poly(family: str, which: str):
    """A family polynomial of ``curves.FAMILY_POLYNOMIALS`` (its one home) as Fractions."""
    coeffs, den = FAMILY_POLYNOMIALS[family][which]
    return _ptrim(Fraction(c, den) for c in coeffs)


def hard_part_exponents(family: str) -> tuple[int, tuple[tuple[int, ...], ...]]:
    """(m, c) with m·(p^4 - p^2 + 1)/r = sum_i sum_k c[i][k]·x^k·p^i as polynomials in x:
    the base-p(x) digits of d(x) = Phi_12(p(x))/r(x), each of degree < deg p(x), times
    the least m that clears their denominators."""
    P, R = _family_poly(family, "q"), _family_poly(family, "r")
    P2 = _pmul(P, P)
    phi12 = _padd(_padd(_pmul(P2, P2), _pscale(P2, -1)), _poly(1))
    d, rem = _pdivmod(phi12, R)
    if rem:
        raise ArithmeticError(f"{family}: r(x) does not divide Phi_12(p(x))")
    digits = []
    while d:
        d, digit = _pdivmod(d, P)
        digits.append(digit)
    m = math.lcm(*(c.denominator for digit in digits for c in digit))
    width = max(len(digit) for digit in digits)
    return m, tuple(tuple(int(c * m) for c in digit + [0] * (width - len(digit)))
                    for digit in digits)


def naf(k: int) -> tuple[int, ...]:
    """The non-adjacent form of k >= 0, most significant digit first: digits in {-1, 0, 1},
    no two adjacent non-zero (a third fewer additions than binary on average)."""
    digits = []
    while k:
        d = 2 - k % 4 if k % 2 else 0
        digits.append(d)
        k = (k - d) // 2
    return tuple(reversed(digits))


# -- per-curve data ----------------------------------------------------------------


@dataclass(frozen=True)
class PairingCurve:
    """What the pairing of one curve needs, all derived from its records."""

    name: str
    family: str                  # "bn" or "bls12"
    x: int                       # the family seed
    tower: Tower
    twist: str                   # "D" (line ly + lx w + lc w^3) or "M" (lc + lx w^2 + ly w^3)
    b3: tuple                    # 3·b', b' the twist's coefficient
    loop: tuple                  # NAF digits of the Miller loop scalar below its top digit
    loop_negative: bool          # the scalar is negative: conjugate f at the end
    pi: tuple                    # (gx, gy): pi(x, y) = (conj(x)·gx, conj(y)·gy) on the twist
    x_naf: tuple                 # NAF of |x|, for exponentiations by x
    m: int                       # the pairing is the reduced ate pairing to this power
    hard: tuple                  # c[i][k] of hard_part_exponents


@functools.lru_cache(maxsize=None)
def pairing_curve(curve: str) -> PairingCurve:
    """The pairing data of ``"bn254"`` or ``"bls12_381"`` (built on first use)."""
    G2 = group(f"{curve}.g2")
    F2 = tower(G2.tower)
    if F2.beta != -1:
        raise ValueError(f"{curve}: this tower is written for u^2 = -1")
    family, x = curve_family(G2.curve)          # checked against q and r when the groups were built
    if family not in FAMILY_POLYNOMIALS:
        raise ValueError(f"{curve}: neither a BN nor a BLS12 curve")
    T = Tower(G2.p, F2.xi)
    scalar = 6 * x + 2 if family == "bn" else x
    if family == "bn" and scalar < 0:
        raise NotImplementedError("BN with 6x + 2 < 0: the final lines would need -pi(Q)")
    # Frobenius on the twist: pi = psi^-1 ∘ Frob ∘ psi with psi(x, y) = (x w^2, y w^3)
    # (D-type) or (x w^-2, y w^-3) (M-type), so gamma = w^(±2(p-1)), w^(±3(p-1)).
    g = T.gamma[1]
    pi = (g[2], g[3]) if G2.twist == "D" else (T.inv2(g[2]), T.inv2(g[3]))
    m, hard = hard_part_exponents(family)
    if math.gcd(m, G2.r) != 1:
        raise ArithmeticError(f"{curve}: m = {m} is not coprime to r")
    return PairingCurve(name=G2.curve, family=family, x=x, tower=T, twist=G2.twist,
                        b3=T.scale2(G2.b, 3), loop=naf(abs(scalar))[1:],
                        loop_negative=scalar < 0, pi=pi, x_naf=naf(abs(x)), m=m, hard=hard)


# -- the Miller loop -------------------------------------------------------------------


def double_step(T: Tower, b3, R, yp2: int, nxp3: int):
    """(2R, the tangent line at R evaluated at P), R = (X : Y : Z) on y^2 = x^3 + b'.

    With b3 = 3b' and E = 3b'Z^2: 2R = (2XY(Y^2 - 3E) : (Y^2 + 3E)^2 - 12E^2 : 8Y^3 Z)
    (the affine doubling times 4, using Y^2 Z = X^3 + b' Z^3). The tangent at the
    untwisted R evaluated at P, times 2YZ: 2YZ·yP - 3X^2·xP·w + (Y^2 - 3b'Z^2)·w^3
    for the D-type twist; for the M-type the same three coefficients sit at w^3,
    w^2 and 1 (the line times w^3). Factors in Fq2 or Fq4 like these vanish in the
    final exponentiation. yp2 = 2yP, nxp3 = -3xP (1 and 1: the coefficients before P
    scales them, as ``prepare_g2`` keeps them)."""
    mul2, sqr2 = T.mul2, T.sqr2
    X, Y, Z = R
    XX, YY, ZZ = sqr2(X), sqr2(Y), sqr2(Z)
    E = mul2(b3, ZZ)
    E3 = (3 * E[0], 3 * E[1])
    YZ = mul2(Y, Z)
    X3 = mul2(mul2(X, Y), _sub2(YY, E3))
    EE = sqr2(E)
    Y3 = _sub2(sqr2(_add2(YY, E3)), (12 * EE[0], 12 * EE[1]))
    Z3 = mul2(YY, YZ)
    line = (T.scale2(YZ, yp2), T.scale2(XX, nxp3), _sub2(YY, E))
    return ((2 * X3[0], 2 * X3[1]), Y3, (8 * Z3[0], 8 * Z3[1])), line


def add_step(T: Tower, R, Q, yp: int, nxp: int):
    """(R + Q, the line through R and Q evaluated at P), Q affine, R != ±Q.

    theta = Y - yQ·Z and lam = X - xQ·Z are the slope's numerator and denominator
    (over Z); the line times lam is lam·yP - theta·xP (w) + (theta·xQ - lam·yQ) (w^3).
    yp = yP, nxp = -xP (1 and 1: the coefficients before P scales them)."""
    mul2, sqr2 = T.mul2, T.sqr2
    X, Y, Z = R
    xq, yq = Q
    theta = _sub2(Y, mul2(yq, Z))
    lam = _sub2(X, mul2(xq, Z))
    line = (T.scale2(lam, yp), T.scale2(theta, nxp), _sub2(mul2(theta, xq), mul2(lam, yq)))
    LL = sqr2(lam)
    LLL = mul2(lam, LL)
    XLL = mul2(X, LL)
    H = _sub2(_add2(mul2(sqr2(theta), Z), LLL), _add2(XLL, XLL))
    R3 = (mul2(lam, H), _sub2(mul2(theta, _sub2(XLL, H)), mul2(Y, LLL)), mul2(Z, LLL))
    return R3, line


def frobenius_twist(C: PairingCurve, Q):
    """pi(Q) on the twist: the image of the p-power Frobenius of the untwisted Q."""
    mul2 = C.tower.mul2
    return (mul2(_conj2(Q[0]), C.pi[0]), mul2(_conj2(Q[1]), C.pi[1]))


def _neg2(a):
    return (-a[0], -a[1])


def prepare_g2(curve: str, Q) -> tuple:
    """The line coefficients of Q's Miller loop, in loop order: ("d" | "a", (cy, cx, c)),
    "d" lines to be scaled at P by (2yP, -3xP), "a" lines by (yP, -xP) (as ``double_step``
    and ``add_step`` scale them). The running point R (doublings and additions of Q, then
    pi(Q) and -pi^2(Q) for BN) does not depend on P, so a fixed Q (a verification key's)
    is prepared once, and each line at P costs two Fq2 scalings instead of a step."""
    C = pairing_curve(curve)
    T = C.tower
    negQ = (Q[0], _neg2(Q[1]))
    R = (Q[0], Q[1], (1, 0))
    steps = []
    for digit in C.loop:
        R, line = double_step(T, C.b3, R, 1, 1)
        steps.append(("d", line))
        if digit:
            R, line = add_step(T, R, Q if digit > 0 else negQ, 1, 1)
            steps.append(("a", line))
    if C.family == "bn":
        Q1 = frobenius_twist(C, Q)
        Q2 = frobenius_twist(C, Q1)
        R, line = add_step(T, R, Q1, 1, 1)
        steps.append(("a", line))
        _, line = add_step(T, R, (Q2[0], _neg2(Q2[1])), 1, 1)
        steps.append(("a", line))
    return tuple(steps)


def miller_loop(curve: str, pairs, prepared=()) -> tuple:
    """prod_i f_{Q_i}(P_i): the Miller loops of the optimal ate pairing, sharing the
    squarings of f. ``pairs``: (P, Q) with P in G1 as ``(x, y)``, Q in G2 as
    ``((x0, x1), (y0, y1))`` (affine Python ints), run with full doubling and addition
    steps; ``prepared``: (P, prepare_g2(Q)), whose lines are only scaled at P. A pair with
    ``None`` (the identity; ``()`` lines) contributes 1. The points must be in G1 and G2
    (not checked here: the loop assumes Q has order r).

    Per step of the loop: f squared (not before the first lines), then the lines of
    ``pairs`` in order, then those of ``prepared`` (``kernels.pairing_cpu`` schedules the
    same steps, so its value is this one)."""
    C = pairing_curve(curve)
    T = C.tower
    p = T.p
    mul_by_line = T.mul_by_line_d if C.twist == "D" else T.mul_by_line_m
    scale2 = T.scale2
    live = [(P, Q) for P, Q in pairs if P is not None and Q is not None]
    # What the lines need of P: yP, -xP, 2yP, -3xP.
    fixed = [((y % p, -x % p, 2 * y % p, -3 * x % p), steps) for (P, steps) in prepared
             if P is not None and steps for x, y in (P,)]
    f = T.one
    if not live and not fixed:
        return f
    Qs = [Q for _, Q in live]
    negQs = [(Q[0], _neg2(Q[1])) for Q in Qs]
    Ps = [(y % p, -x % p, 2 * y % p, -3 * x % p) for (x, y), _ in live]
    Rs = [(Q[0], Q[1], (1, 0)) for Q in Qs]

    def fixed_lines(f, k):
        for (yp, nxp, yp2, nxp3), steps in fixed:
            kind, (cy, cx, c) = steps[k]
            f = mul_by_line(f, scale2(cy, yp2), scale2(cx, nxp3), c) if kind == "d" else \
                mul_by_line(f, scale2(cy, yp), scale2(cx, nxp), c)
        return f

    k = 0                                   # the next prepared line
    for n, digit in enumerate(C.loop):
        if n:                               # f = 1 before the first lines
            f = T.sqr12(f)
        for i, (yp, nxp, yp2, nxp3) in enumerate(Ps):
            Rs[i], line = double_step(T, C.b3, Rs[i], yp2, nxp3)
            f = mul_by_line(f, *line)
        f = fixed_lines(f, k)
        k += 1
        if digit:
            addends = Qs if digit > 0 else negQs
            for i, (yp, nxp, _, _) in enumerate(Ps):
                Rs[i], line = add_step(T, Rs[i], addends[i], yp, nxp)
                f = mul_by_line(f, *line)
            f = fixed_lines(f, k)
            k += 1
    if C.family == "bn":
        # f_{6x+2,Q} · l_{[6x+2]Q, pi(Q)} · l_{[6x+2]Q + pi(Q), -pi^2(Q)}
        for i, (yp, nxp, _, _) in enumerate(Ps):
            Q1 = frobenius_twist(C, Qs[i])
            Q2 = frobenius_twist(C, Q1)
            R, line = add_step(T, Rs[i], Q1, yp, nxp)
            f = mul_by_line(f, *line)
            _, line = add_step(T, R, (Q2[0], _neg2(Q2[1])), yp, nxp)
            f = mul_by_line(f, *line)
        f = fixed_lines(f, k)
        f = fixed_lines(f, k + 1)
    if C.loop_negative:  # f_{-n} = 1/f_n up to a vertical line; 1/f becomes conj f after FE
        f = T.conj12(f)
    return f


# -- membership in G2 ----------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def g2_eigenvalue(curve: str) -> int:
    """lambda = t - 1 (t the trace of Frobenius over Fq): psi(Q) = [lambda]Q exactly for the
    Q of G2 among the points of the twist, psi = ``frobenius_twist`` (Scott, "A note on group
    membership tests for G1, G2 and GT on BLS pairing-friendly curves", 2021; El Housni,
    Guillevic and Piellard, "Co-factor clearing and subgroup membership testing on
    pairing-friendly curves", 2022).

    Why: psi satisfies psi^2 - t·psi + q = 0, so psi(Q) = [lambda]Q gives
    [lambda^2 - t·lambda + q]Q = [q + 1 - t]Q = [#E(Fq)]Q = O; Q's order divides both #E(Fq)
    and #E'(Fq2), whose gcd is r (checked here, else the test would not be sound). Conversely
    psi acts on G2 as the q-power Frobenius, i.e. as [q] = [lambda] (r divides q + 1 - t).
    BN254: lambda = 6x^2 (127 bits), BLS12-381: x (64 bits), where [r]Q needs 255."""
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    if math.gcd(G1.order, G2.order) != G2.r:
        raise ArithmeticError(f"{curve}: gcd(#E(Fq), #E'(Fq2)) != r: psi(Q) = [t - 1]Q does not test membership")
    return G1.trace - 1


def g2_in_subgroup(curve: str, Q) -> bool:
    """Whether Q (None: the identity) is a point of G2: on the twist, and psi(Q) = [t - 1]Q
    (``g2_eigenvalue``). Python ints; ``kernels.pairing_cpu`` compiles the same test."""
    G2 = group(f"{curve}.g2")
    if not is_on_curve(G2, Q):
        return False
    if Q is None:
        return True
    lam = g2_eigenvalue(curve)
    R = lincomb(G2, None, [(abs(lam), Q)])
    if R is not None and lam < 0:
        R = (R[0], G2.F.neg(R[1]))
    return R == frobenius_twist(pairing_curve(curve), Q)


# -- the final exponentiation ----------------------------------------------------------


def _cyclotomic_pow_x(C: PairingCurve, f):
    """f^x for f in the cyclotomic subgroup (where f^-1 = conj f), by the NAF of |x|."""
    T = C.tower
    f_inv = T.conj12(f)
    r = f
    for digit in C.x_naf[1:]:
        r = T.cyclotomic_sqr(r)
        if digit:
            r = T.mul12(r, f if digit > 0 else f_inv)
    return T.conj12(r) if C.x < 0 else r


def _hard_part(C: PairingCurve, f):
    """f^(m·(p^4 - p^2 + 1)/r) = prod_{i,k} Frob^i(f^(x^k))^c[i][k]: the powers f^(x^k)
    by repeated exponentiation by x, then one multi-exponentiation by the small c[i][k]
    sharing its squarings."""
    T = C.tower
    powers = [f]
    while len(powers) < len(C.hard[0]):
        powers.append(_cyclotomic_pow_x(C, powers[-1]))
    terms = []
    for i, row in enumerate(C.hard):
        for k, c in enumerate(row):
            if c:
                base = T.frobenius(powers[k], i) if i else powers[k]
                terms.append((T.conj12(base) if c < 0 else base, abs(c)))
    result = None
    for bit in reversed(range(max(e for _, e in terms).bit_length())):
        if result is not None:
            result = T.cyclotomic_sqr(result)
        for base, e in terms:
            if e >> bit & 1:
                result = base if result is None else T.mul12(result, base)
    return result


def final_exponentiation(curve: str, f):
    """f^(m·(p^12 - 1)/r), reduced (m: see the module doc)."""
    C = pairing_curve(curve)
    T = C.tower
    f = T.mul12(T.conj12(f), T.inv12(f))      # f^(p^6 - 1)
    f = T.mul12(T.frobenius(f, 2), f)         # ^(p^2 + 1): now in the cyclotomic subgroup
    return T.reduce12(_hard_part(C, f))


def pairing(curve: str, P, Q):
    """e(P, Q) as an Fq12 tuple (see the module doc for which power of the ate pairing)."""
    return final_exponentiation(curve, miller_loop(curve, [(P, Q)]))


def pairing_check(curve: str, pairs, prepared=()) -> bool:
    """Whether prod_i e(P_i, Q_i) = 1 (``pairs`` and ``prepared`` as for ``miller_loop``)."""
    f = final_exponentiation(curve, miller_loop(curve, pairs, prepared))
    return f == pairing_curve(curve).tower.one
