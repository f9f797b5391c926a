"""The pairing's building blocks as traced field programs over Fq (the kernels of `pairing_cpu`).

Each program is one step of the Miller loop or of the final exponentiation, written over
traced Fq values (`ir.program.Sym`) and compiled by the pass pipeline: an Fq2 value is a
pair of them, Fq6 three Fq2, Fq12 two Fq6, in the tower and layout of
`zktensor.algebra.pairing` (Fq2 = Fq[u]/(u^2 + 1), Fq6 = Fq2[v]/(v^3 - xi),
Fq12 = Fq6[w]/(w^2 - v); f[i][j] is the coefficient of v^j·w^i). Programs take and return
flat tuples of Fq values in that order (`flat12`, `unflat12`).

The formulas are those of `algebra.pairing` (the same lines, scaled the same way, so the
Miller loop value is the same element, word for word), written for compiled code: in Fq2
Karatsuba's three products (a product costs far more than the additions it saves, unlike
on Python ints), and products by small integers (xi = 9 + u, the 3 and 12 of the doubling)
as additions. The step kinds (`programs`):

    sqr12   f -> f^2                          mul12   a, b -> a·b
    line    f, cy, cx, c, a, b -> f·l         the sparse line l with coefficients (cy·a, cx·b, c)
    dbl     R -> 2R, (cy, cx, c)              the tangent's coefficients before P scales them
    add     R, Q -> R + Q, (cy, cx, c)        the chord's (Q affine)
    pi      Q -> pi(Q)                        the Frobenius of the twist (BN's last two lines)
    negpi2  Q -> -pi^2(Q)
    conj12  f -> f^(p^6)                      inv6    a -> 1/a in Fq6
    frob1/2/3  f -> f^(p^k)                   csqr    f -> f^2 in the cyclotomic subgroup
    g1dbl   P -> 2P                           g1add   P, Q -> P + Q   (G1, complete formulas,
                                                                       for the verifier's vk_x)
"""
from __future__ import annotations

# -- Fq2 -------------------------------------------------------------------------------


def times(a, k: int):
    """k·a for a small k >= 1 by additions (double-and-add): a product would cost more."""
    if k < 1:
        raise ValueError("times: k >= 1")
    acc = a
    for bit in bin(k)[3:]:
        acc = acc + acc
        if bit == "1":
            acc = acc + a
    return acc


def add2(a, b):
    return (a[0] + b[0], a[1] + b[1])


def sub2(a, b):
    return (a[0] - b[0], a[1] - b[1])


def neg2(a):
    return (-a[0], -a[1])


def times2(a, k: int):
    return (times(a[0], k), times(a[1], k))


def conj2(a):
    return (a[0], -a[1])


def mul2(a, b):
    """Karatsuba: three products (u^2 = -1)."""
    t0, t1 = a[0] * b[0], a[1] * b[1]
    return (t0 - t1, (a[0] + a[1]) * (b[0] + b[1]) - t0 - t1)


def sqr2(a):
    """(a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u: two products."""
    t = a[0] * a[1]
    return ((a[0] + a[1]) * (a[0] - a[1]), t + t)


def scale2(a, k):
    """a·k for k in Fq (a traced value)."""
    return (a[0] * k, a[1] * k)


def _combo(terms):
    """The sum of sign·x·k over (sign, x, k), leaving out the terms with k = 0."""
    acc = None
    for sign, x, k in terms:
        if k:
            t = x * k
            acc = (t if sign > 0 else -t) if acc is None else (acc + t if sign > 0 else acc - t)
    return acc


def mul2_const(a, c: tuple[int, int]):
    """a·c for a non-zero constant c = c0 + c1 u (ints). Parts 0 and 1 cost no product
    (canonicalize folds x·1), so with one of them the schoolbook form is cheapest (xi = 9 + u:
    two products); else Karatsuba's three."""
    c0, c1 = c
    if c0 in (0, 1) or c1 in (0, 1):
        return (_combo([(1, a[0], c0), (-1, a[1], c1)]), _combo([(1, a[1], c0), (1, a[0], c1)]))
    t0, t1 = a[0] * c0, a[1] * c1
    return (t0 - t1, (a[0] + a[1]) * (c0 + c1) - t0 - t1)


def mul_small2(a, c: tuple[int, int]):
    """a·c for a constant c: by additions where both parts are 1 to 3 (BLS12-381's xi = 1 + u),
    else by `mul2_const` (BN254's 9 + u: two products cost less code than eight additions,
    and about as much time)."""
    c0, c1 = c
    if not (0 < c0 <= 3 and 0 < c1 <= 3):
        return mul2_const(a, c)
    return (times(a[0], c0) - times(a[1], c1), times(a[1], c0) + times(a[0], c1))


# -- Fq6 and Fq12 ---------------------------------------------------------------------------


class Tower:
    """Fq6 and Fq12 arithmetic over traced values for one curve's xi (small ints) and
    Frobenius constants gamma[k][n] = xi^(n(p^k - 1)/6) (Fq2 ints, from `algebra.pairing`)."""

    def __init__(self, xi: tuple[int, int], gamma: dict):
        self.xi, self.gamma = xi, gamma

    def mul_xi(self, a):
        return mul_small2(a, self.xi)

    # -- Fq6 ----------------------------------------------------------------------------
    @staticmethod
    def add6(a, b):
        return tuple(add2(x, y) for x, y in zip(a, b))

    @staticmethod
    def sub6(a, b):
        return tuple(sub2(x, y) for x, y in zip(a, b))

    @staticmethod
    def neg6(a):
        return tuple(neg2(x) for x in a)

    def mul6(self, a, b):
        """Karatsuba over Fq2: 6 Fq2 products."""
        a0, a1, a2 = a
        b0, b1, b2 = b
        t0, t1, t2 = mul2(a0, b0), mul2(a1, b1), mul2(a2, b2)
        s12 = mul2(add2(a1, a2), add2(b1, b2))
        s01 = mul2(add2(a0, a1), add2(b0, b1))
        s02 = mul2(add2(a0, a2), add2(b0, b2))
        return (add2(t0, self.mul_xi(sub2(s12, add2(t1, t2)))),
                add2(sub2(s01, add2(t0, t1)), self.mul_xi(t2)),
                add2(sub2(s02, add2(t0, t2)), t1))

    def mul6_by_v(self, a):
        return (self.mul_xi(a[2]), a[0], a[1])

    @staticmethod
    def mul6_by_2(a, b):
        return (mul2(a[0], b), mul2(a[1], b), mul2(a[2], b))

    def mul6_by_01(self, a, b0, b1):
        """a·(b0 + b1·v): 5 Fq2 products."""
        a0, a1, a2 = a
        t0, t1 = mul2(a0, b0), mul2(a1, b1)
        return (add2(t0, self.mul_xi(sub2(mul2(add2(a1, a2), b1), t1))),
                sub2(mul2(add2(a0, a1), add2(b0, b1)), add2(t0, t1)),
                add2(sub2(mul2(add2(a0, a2), b0), t0), t1))

    def mul6_by_1(self, a, b1):
        return (self.mul_xi(mul2(a[2], b1)), mul2(a[0], b1), mul2(a[1], b1))

    def inv6(self, a):
        """1/a by the adjugate; the one Fq inversion is x^(p-2) (field.pow)."""
        a0, a1, a2 = a
        A = sub2(sqr2(a0), self.mul_xi(mul2(a1, a2)))
        B = sub2(self.mul_xi(sqr2(a2)), mul2(a0, a1))
        C = sub2(sqr2(a1), mul2(a0, a2))
        F = add2(mul2(a0, A), self.mul_xi(add2(mul2(a2, B), mul2(a1, C))))
        n = F[0] * F[0] + F[1] * F[1]              # F·conj(F), in Fq
        ninv = n.inverse()
        Finv = (F[0] * ninv, -(F[1] * ninv))
        return self.mul6_by_2((A, B, C), Finv)

    # -- Fq12 ---------------------------------------------------------------------------
    def mul12(self, a, b):
        a0, a1 = a
        b0, b1 = b
        t0, t1 = self.mul6(a0, b0), self.mul6(a1, b1)
        return (self.add6(t0, self.mul6_by_v(t1)),
                self.sub6(self.mul6(self.add6(a0, a1), self.add6(b0, b1)), self.add6(t0, t1)))

    def sqr12(self, a):
        """The complex method: 2 Fq6 products."""
        a0, a1 = a
        t = self.mul6(a0, a1)
        c0 = self.mul6(self.add6(a0, a1), self.add6(a0, self.mul6_by_v(a1)))
        return (self.sub6(c0, self.add6(t, self.mul6_by_v(t))), self.add6(t, t))

    def conj12(self, a):
        return (a[0], self.neg6(a[1]))

    def frobenius(self, a, k: int):
        g = self.gamma[k]
        (a00, a01, a02), (a10, a11, a12) = a
        if k % 2:
            a00, a01, a02, a10, a11, a12 = map(conj2, (a00, a01, a02, a10, a11, a12))
        return ((a00, mul2_const(a01, g[2]), mul2_const(a02, g[4])),
                (mul2_const(a10, g[1]), mul2_const(a11, g[3]), mul2_const(a12, g[5])))

    def _sqr4(self, x0, x1):
        t0, t1 = sqr2(x0), sqr2(x1)
        return add2(t0, self.mul_xi(t1)), sub2(sqr2(add2(x0, x1)), add2(t0, t1))

    def cyclotomic_sqr(self, a):
        """Granger and Scott's squaring in the cyclotomic subgroup (see algebra.pairing)."""
        (g0, g2, g4), (g1, g3, g5) = a
        A0, A1 = self._sqr4(g0, g3)
        B0, B1 = self._sqr4(g1, g4)
        C0, C1 = self._sqr4(g2, g5)
        sC1 = self.mul_xi(C1)

        def lin(t, g, sign):          # 3t + sign·2g
            t3, g2_ = times2(t, 3), add2(g, g)
            return add2(t3, g2_) if sign > 0 else sub2(t3, g2_)
        return ((lin(A0, g0, -1), lin(B0, g2, -1), lin(C0, g4, -1)),
                (lin(sC1, g1, 1), lin(A1, g3, 1), lin(B1, g5, 1)))

    def mul_by_line(self, twist: str, f, ly, lx, lc):
        """f·l for a D-type line ly + lx·w + lc·w^3 or an M-type lc + lx·w^2 + ly·w^3."""
        f0, f1 = f
        if twist == "D":
            t0 = self.mul6_by_2(f0, ly)
            t1 = self.mul6_by_01(f1, lx, lc)
            s = self.mul6_by_01(self.add6(f0, f1), add2(ly, lx), lc)
        else:
            t0 = self.mul6_by_01(f0, lc, lx)
            t1 = self.mul6_by_1(f1, ly)
            s = self.mul6_by_01(self.add6(f0, f1), lc, add2(lx, ly))
        return (self.add6(t0, self.mul6_by_v(t1)), self.sub6(s, self.add6(t0, t1)))


# -- flat layouts ----------------------------------------------------------------------------


def flat12(a) -> tuple:
    """Fq12 -> 12 Fq values: f[i][j] = (c0, c1) in the order i, j, part."""
    return tuple(c for half in a for q in half for c in q)


def unflat12(xs):
    xs = list(xs)
    q = [(xs[2 * k], xs[2 * k + 1]) for k in range(6)]
    return ((q[0], q[1], q[2]), (q[3], q[4], q[5]))


def pairs_of(xs):
    """Flat Fq values -> Fq2 values."""
    xs = list(xs)
    return [(xs[2 * k], xs[2 * k + 1]) for k in range(len(xs) // 2)]


def flat(values) -> tuple:
    return tuple(c for v in values for c in v)


# -- the steps ------------------------------------------------------------------------------


def double_step(b3, R):
    """(2R, (cy, cx, c)): algebra.pairing's doubling step with the line not yet evaluated
    at P (the line at P is cy·2yP + cx·(-3xP)·w + c·w^3, D-type)."""
    X, Y, Z = R
    XX, YY, ZZ = sqr2(X), sqr2(Y), sqr2(Z)
    E = mul2_const(ZZ, b3)
    E3 = times2(E, 3)
    YZ = mul2(Y, Z)
    X3 = mul2(mul2(X, Y), sub2(YY, E3))
    Y3 = sub2(sqr2(add2(YY, E3)), times2(sqr2(E), 12))
    Z3 = mul2(YY, YZ)
    return (times2(X3, 2), Y3, times2(Z3, 8)), (YZ, XX, sub2(YY, E))


def add_step(R, Q):
    """(R + Q, (cy, cx, c)) for affine Q, R != ±Q: algebra.pairing's addition step (the line
    at P is cy·yP + cx·(-xP)·w + c·w^3, D-type)."""
    X, Y, Z = R
    xq, yq = Q
    theta = sub2(Y, mul2(yq, Z))
    lam = sub2(X, mul2(xq, Z))
    c = sub2(mul2(theta, xq), mul2(lam, yq))
    LL = sqr2(lam)
    LLL = mul2(lam, LL)
    XLL = mul2(X, LL)
    H = sub2(add2(mul2(sqr2(theta), Z), LLL), add2(XLL, XLL))
    R3 = (mul2(lam, H), sub2(mul2(theta, sub2(XLL, H)), mul2(Y, LLL)), mul2(Z, LLL))
    return R3, (lam, theta, c)


def twist_frobenius(pi, Q):
    """pi(Q) = (conj(x)·gx, conj(y)·gy) on the twist."""
    return (mul2_const(conj2(Q[0]), pi[0]), mul2_const(conj2(Q[1]), pi[1]))


def g1_double(b3: int, P):
    """2P for P = (X : Y : Z) on y^2 = x^3 + b over Fq, complete (the identity (0 : 1 : 0)
    included): Renes, Costello and Batina, "Complete addition formulas for prime order
    elliptic curves", 2016, algorithm 9 (a = 0). b3 = 3b, small: by additions."""
    X, Y, Z = P
    t0 = Y * Y
    Z3 = times(t0, 8)
    t1 = Y * Z
    t2 = times(Z * Z, b3)
    X3 = t2 * Z3
    Y3 = t0 + t2
    Z3 = t1 * Z3
    t0 = t0 - times(t2, 3)
    Y3 = X3 + t0 * Y3
    X3 = t0 * (X * Y)
    return (X3 + X3, Y3, Z3)


def g1_add_affine(b3: int, P, Q):
    """P + Q for P = (X : Y : Z) and an affine Q (not the identity), complete in P (P = Q,
    P = -Q and the identity included): algorithm 8 of the same paper (a = 0)."""
    X1, Y1, Z1 = P
    X2, Y2 = Q
    t0, t1 = X1 * X2, Y1 * Y2
    t3 = (X2 + Y2) * (X1 + Y1) - (t0 + t1)
    t4 = Y2 * Z1 + Y1
    Y3 = X2 * Z1 + X1
    t0 = times(t0, 3)
    t2 = times(Z1, b3)
    Z3 = t1 + t2
    t1 = t1 - t2
    Y3 = times(Y3, b3)
    X3 = t3 * t1 - t4 * Y3
    Y3 = t1 * Z3 + Y3 * t0
    Z3 = Z3 * t4 + t0 * t3
    return (X3, Y3, Z3)


def programs(C, b3_g1: int) -> dict:
    """{kind: (n_inputs, n_outputs, fn)} for the pairing curve record C
    (`algebra.pairing.PairingCurve`) and 3b of its G1: the step kinds of the module doc,
    each a function of flat Fq values returning a tuple of them."""
    T = Tower(C.tower.xi, C.tower.gamma)
    twist = C.twist

    def sqr12(*x):
        return flat12(T.sqr12(unflat12(x)))

    def mul12(*x):
        return flat12(T.mul12(unflat12(x[:12]), unflat12(x[12:])))

    def line(*x):
        f = unflat12(x[:12])
        cy, cx, c = pairs_of(x[12:18])
        a, b = x[18], x[19]
        return flat12(T.mul_by_line(twist, f, scale2(cy, a), scale2(cx, b), c))

    def dbl(*x):
        R, coeffs = double_step(C.b3, pairs_of(x))
        return flat(R) + flat(coeffs)

    def add(*x):
        v = pairs_of(x)
        R, coeffs = add_step(v[:3], v[3:])
        return flat(R) + flat(coeffs)

    def pi(*x):
        return flat(twist_frobenius(C.pi, pairs_of(x)))

    def negpi2(*x):
        Q2 = twist_frobenius(C.pi, twist_frobenius(C.pi, pairs_of(x)))
        return flat((Q2[0], neg2(Q2[1])))

    def conj12(*x):
        return flat12(T.conj12(unflat12(x)))

    def inv6(*x):
        return flat(T.inv6(pairs_of(x)))

    def frob(k):
        return lambda *x: flat12(T.frobenius(unflat12(x), k))

    def csqr(*x):
        return flat12(T.cyclotomic_sqr(unflat12(x)))

    def g1dbl(*x):
        return g1_double(b3_g1, x)

    def g1add(*x):
        return g1_add_affine(b3_g1, x[:3], x[3:])

    return {"sqr12": (12, 12, sqr12), "mul12": (24, 12, mul12), "line": (20, 12, line),
            "dbl": (6, 12, dbl), "add": (10, 12, add), "pi": (4, 4, pi), "negpi2": (4, 4, negpi2),
            "conj12": (12, 12, conj12), "inv6": (6, 6, inv6), "frob1": (12, 12, frob(1)),
            "frob2": (12, 12, frob(2)), "frob3": (12, 12, frob(3)), "csqr": (12, 12, csqr),
            "g1dbl": (3, 3, g1dbl), "g1add": (5, 3, g1add)}
