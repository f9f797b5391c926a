"""ec-to-field: lower `ec` programs into straight-line `field` programs over Fq.

Input: an `ec`-dialect module (from `EcProgram.to_mlir()`, parsed and verified
against the IRDL declaration) with one `@main` over points, coordinates and
base-field values of one group. Output: a `field`-dialect function over Fq,
returned as a `zktensor.ir.program.Program`, ready for the rest of the
pipeline (canonicalize, fuse-elementwise, field-to-limbs, ...).

Every value becomes a list of Fq values ("components"): an Fq2 coordinate is
(c0, c1) for c0 + c1·u; a point is its coordinates in order, e.g. an XYZZ G2
point is X.c0, X.c1, Y.c0, Y.c1, ZZ.c0, ZZ.c1, ZZZ.c0, ZZZ.c1. Function
arguments and results are flattened the same way.

The lowering has two layers:

1. point ops -> coordinate arithmetic, by the formulas of the Explicit-Formulas
   Database (Bernstein–Lange, hyperelliptic.org/EFD/g1p/auto-shortw-*.html):
   XYZZ `add-2008-s` (12M + 2S; mixed 8M + 2S) and `dbl-2008-s-1`; Jacobian
   `add-2007-bl`, `madd-2007-bl`, `dbl-2009-l` (a = 0) and `dbl-2007-bl`;
   an affine operand is the point with Z = 1 and the resulting products by
   one vanish (the mixed formulas fall out). Small multiples (2x, 3x, 8x) are
   additions; a term with the curve coefficient a is dropped when a = 0.
2. coordinate arithmetic -> Fq ops: over Fq2 = Fq[u]/(u^2 - beta), Karatsuba
   multiplication (3 Fq products), squaring as (a0 + a1)(a0 + beta a1) - ...
   (2 products when beta = -1), multiplication by beta as additions.

A peephole layer folds products by known 0 and 1 (canonicalize folds the
rest), so a mixed or affine operand costs no more than its dedicated formula.

    %2 = "ec.add"(%0, %1) : (!ec.point<"bn254.g1", "xyzz">,      %8 = field.mul %0, %6      (U1 = X1·ZZ2)
          !ec.point<"bn254.g1", "affine">)                ->      %9 = field.mul %4, %2      (U2 = x2·ZZ1)
          -> !ec.point<"bn254.g1", "xyzz">                        ...  (8M + 2S in all)

`ec.select(c, a, b)` becomes b + c·(a - b) per component (c is 0 or 1);
`ec.cross(P, Q)` the (U2 - U1, S2 - S1) of the addition formula, which CSE
merges with an `ec.add` of the same operands.
"""
from __future__ import annotations

from ..algebra import field as field_record
from ..algebra.curves import group as group_record
from ..ir.ec import COORDS, parse_const
from ..ir.program import Program


# -- Fq: elements are 1-tuples of value ids ------------------------------------------


SMALL = 16   # products by constants up to this size (either sign) become additions


class FqOps:
    """Emits `field` ops into a Program, folding products and sums with known 0 and 1."""

    degree = 1

    def __init__(self, prog: Program):
        self.prog = prog
        self.p = prog.field.p
        self.consts: dict[int, int] = {}

    def _c(self, v):
        return self.consts.get(v)

    def const1(self, value: int) -> int:
        vid = self.prog.add("constant", (), value % self.p)
        self.consts[vid] = value % self.p
        return vid

    def add1(self, a, b):
        if self._c(a) == 0: return b
        if self._c(b) == 0: return a
        return self.prog.add("add", (a, b))

    def sub1(self, a, b):
        if self._c(b) == 0: return a
        if self._c(a) == 0: return self.neg1(b)
        return self.prog.add("sub", (a, b))

    def neg1(self, a):
        if self._c(a) == 0: return a
        return self.prog.add("neg", (a,))

    def mul1(self, a, b):
        ca, cb = self._c(a), self._c(b)
        if ca == 0 or cb == 0: return self.const1(0)
        if ca == 1: return b
        if cb == 1: return a
        for c, x in ((ca, b), (cb, a)):     # small constants (curve coefficients): additions
            if c is not None and min(c, self.p - c) <= SMALL:
                return self.small1(x, c if c <= SMALL else c - self.p)
        if a == b: return self.prog.add("square", (a,))
        return self.prog.add("mul", (a, b))

    def sqr1(self, a):
        ca = self._c(a)
        if ca in (0, 1): return a
        return self.prog.add("square", (a,))

    def small1(self, a, k: int):
        """k·a for a small integer k, by additions (double-and-add on k)."""
        if k < 0:
            return self.neg1(self.small1(a, -k))
        if k == 0:
            return self.const1(0)
        acc = None
        for bit in bin(k)[2:]:
            acc = acc if acc is None else self.add1(acc, acc)
            if bit == "1":
                acc = a if acc is None else self.add1(acc, a)
        return acc

    # -- coordinate interface (tuples) -----------------------------------------
    def add(self, a, b): return (self.add1(a[0], b[0]),)
    def sub(self, a, b): return (self.sub1(a[0], b[0]),)
    def neg(self, a): return (self.neg1(a[0]),)
    def mul(self, a, b): return (self.mul1(a[0], b[0]),)
    def sqr(self, a): return (self.sqr1(a[0]),)
    def small(self, a, k): return (self.small1(a[0], k),)
    def scale(self, a, s): return (self.mul1(a[0], s),)
    def const(self, value): return (self.const1(value),)
    def is_zero_const(self, a): return self._c(a[0]) == 0
    def is_one_const(self, a): return self._c(a[0]) == 1


class Fq2Ops(FqOps):
    """Fq2 = Fq[u] / (u^2 - beta) on pairs of Fq values."""

    degree = 2

    def __init__(self, prog: Program, beta: int):
        super().__init__(prog)
        self.beta = beta

    def _plus_beta(self, a, x):
        """a + beta·x for the (small, signed) non-residue beta."""
        if self.beta < 0:
            return self.sub1(a, self.mul1(x, self.const1(-self.beta)))
        return self.add1(a, self.mul1(x, self.const1(self.beta)))

    def add(self, a, b): return (self.add1(a[0], b[0]), self.add1(a[1], b[1]))
    def sub(self, a, b): return (self.sub1(a[0], b[0]), self.sub1(a[1], b[1]))
    def neg(self, a): return (self.neg1(a[0]), self.neg1(a[1]))
    def small(self, a, k): return (self.small1(a[0], k), self.small1(a[1], k))
    def scale(self, a, s): return (self.mul1(a[0], s), self.mul1(a[1], s))

    def mul(self, a, b):
        if a == b:
            return self.sqr(a)
        (a0, a1), (b0, b1) = a, b
        if self._c(a1) == 0 or self._c(b1) == 0:     # one factor in Fq: 2 products
            s, (x0, x1) = (a0, b) if self._c(a1) == 0 else (b0, a)
            return (self.mul1(x0, s), self.mul1(x1, s))
        v0, v1 = self.mul1(a0, b0), self.mul1(a1, b1)
        t = self.mul1(self.add1(a0, a1), self.add1(b0, b1))
        return (self._plus_beta(v0, v1), self.sub1(self.sub1(t, v0), v1))

    def sqr(self, a):
        a0, a1 = a
        if self._c(a1) == 0:
            return (self.sqr1(a0), a1)
        v = self.mul1(a0, a1)
        # (a0 + a1)(a0 + beta a1) = a0^2 + beta a1^2 + (1 + beta) a0 a1
        t = self.mul1(self.add1(a0, a1), self._plus_beta(a0, a1))
        c0 = self.sub1(t, self.small1(v, 1 + self.beta)) if self.beta != -1 else t
        return (c0, self.add1(v, v))

    def const(self, value):
        v = value if isinstance(value, tuple) else (value, 0)
        return (self.const1(v[0]), self.const1(v[1]))

    def is_zero_const(self, a):
        return self._c(a[0]) == 0 and self._c(a[1]) == 0

    def is_one_const(self, a):
        return self._c(a[0]) == 1 and self._c(a[1]) == 0


# -- point formulas over a coordinate arithmetic C ------------------------------------


def _z_one(C):
    return C.const(1)


def as_xyzz(C, kind, P):
    if kind == "xyzz":
        return P
    if kind == "affine":
        one = _z_one(C)
        return (P[0], P[1], one, one)
    if kind == "jacobian":
        X, Y, Z = P
        ZZ = C.sqr(Z)
        return (X, Y, ZZ, C.mul(ZZ, Z))
    raise ValueError(kind)


def as_jacobian(C, kind, P):
    if kind == "jacobian":
        return P
    if kind == "affine":
        return (P[0], P[1], _z_one(C))
    if kind == "xyzz":
        X, Y, ZZ, ZZZ = P
        ZZZ2 = C.sqr(ZZZ)
        ZZ_ZZZ2 = C.mul(ZZ, ZZZ2)
        return (C.mul(X, ZZ_ZZZ2), C.mul(Y, C.mul(C.sqr(ZZ), ZZ_ZZZ2)), C.mul(ZZ, ZZZ))
    raise ValueError(kind)


def xyzz_cross(C, P, Q):
    X1, Y1, ZZ1, ZZZ1 = P
    X2, Y2, ZZ2, ZZZ2 = Q
    U1, U2 = C.mul(X1, ZZ2), C.mul(X2, ZZ1)
    S1, S2 = C.mul(Y1, ZZZ2), C.mul(Y2, ZZZ1)
    return U1, S1, C.sub(U2, U1), C.sub(S2, S1)


def xyzz_add(C, P, Q):
    """add-2008-s; with ZZ2 = ZZZ2 = 1 it is madd-2008-s."""
    U1, S1, H, R = xyzz_cross(C, P, Q)
    PP = C.sqr(H)
    PPP = C.mul(H, PP)
    Qv = C.mul(U1, PP)
    X3 = C.sub(C.sub(C.sqr(R), PPP), C.small(Qv, 2))
    Y3 = C.sub(C.mul(R, C.sub(Qv, X3)), C.mul(S1, PPP))
    ZZ3 = C.mul(C.mul(P[2], Q[2]), PP)
    ZZZ3 = C.mul(C.mul(P[3], Q[3]), PPP)
    return (X3, Y3, ZZ3, ZZZ3)


def xyzz_double(C, a, P):
    """dbl-2008-s-1 (mdbl-2008-s-1 when ZZ1 = ZZZ1 = 1). Complete: the identity and
    points with y = 0 double to ZZ = ZZZ = 0."""
    X1, Y1, ZZ1, ZZZ1 = P
    U = C.small(Y1, 2)
    V = C.sqr(U)
    W = C.mul(U, V)
    S = C.mul(X1, V)
    M = C.small(C.sqr(X1), 3)
    if not C.is_zero_const(a):
        M = C.add(M, C.mul(a, C.sqr(ZZ1)))
    X3 = C.sub(C.sqr(M), C.small(S, 2))
    Y3 = C.sub(C.mul(M, C.sub(S, X3)), C.mul(W, Y1))
    return (X3, Y3, C.mul(V, ZZ1), C.mul(W, ZZZ1))


def jacobian_cross(C, P, Q):
    X1, Y1, Z1 = P
    X2, Y2, Z2 = Q
    Z1Z1, Z2Z2 = C.sqr(Z1), C.sqr(Z2)
    U1, U2 = C.mul(X1, Z2Z2), C.mul(X2, Z1Z1)
    S1 = C.mul(C.mul(Y1, Z2), Z2Z2)
    S2 = C.mul(C.mul(Y2, Z1), Z1Z1)
    return Z1Z1, Z2Z2, U1, S1, C.sub(U2, U1), C.sub(S2, S1)


def jacobian_add(C, P, Q):
    """add-2007-bl (madd-2007-bl when Z2 = 1)."""
    Z1Z1, Z2Z2, U1, S1, H, Rd = jacobian_cross(C, P, Q)
    I = C.sqr(C.small(H, 2))
    J = C.mul(H, I)
    r = C.small(Rd, 2)
    V = C.mul(U1, I)
    X3 = C.sub(C.sub(C.sqr(r), J), C.small(V, 2))
    Y3 = C.sub(C.mul(r, C.sub(V, X3)), C.small(C.mul(S1, J), 2))
    Z1, Z2 = P[2], Q[2]
    if C.is_one_const(Z1) and C.is_one_const(Z2):        # mmadd-2007-bl
        Z3 = C.small(H, 2)
    elif C.is_one_const(Z2):                             # madd-2007-bl
        Z3 = C.sub(C.sub(C.sqr(C.add(Z1, H)), Z1Z1), C.sqr(H))
    elif C.is_one_const(Z1):
        Z3 = C.sub(C.sub(C.sqr(C.add(Z2, H)), Z2Z2), C.sqr(H))
    else:
        Z3 = C.mul(C.sub(C.sub(C.sqr(C.add(Z1, Z2)), Z1Z1), Z2Z2), H)
    return (X3, Y3, Z3)


def jacobian_double(C, a, P):
    """dbl-2009-l for a = 0, dbl-2007-bl otherwise. The identity (Z = 0) doubles to Z = 0."""
    X1, Y1, Z1 = P
    if C.is_zero_const(a):
        A = C.sqr(X1)
        B = C.sqr(Y1)
        Cc = C.sqr(B)
        D = C.small(C.sub(C.sub(C.sqr(C.add(X1, B)), A), Cc), 2)
        E = C.small(A, 3)
        F = C.sqr(E)
        X3 = C.sub(F, C.small(D, 2))
        Y3 = C.sub(C.mul(E, C.sub(D, X3)), C.small(Cc, 8))
        Z3 = C.small(C.mul(Y1, Z1), 2)
        return (X3, Y3, Z3)
    XX, YY = C.sqr(X1), C.sqr(Y1)
    YYYY = C.sqr(YY)
    ZZ = C.sqr(Z1)
    S = C.small(C.sub(C.sub(C.sqr(C.add(X1, YY)), XX), YYYY), 2)
    M = C.add(C.small(XX, 3), C.mul(a, C.sqr(ZZ)))
    T = C.sub(C.sqr(M), C.small(S, 2))
    Y3 = C.sub(C.mul(M, C.sub(S, T)), C.small(YYYY, 8))
    Z3 = C.sub(C.sub(C.sqr(C.add(Y1, Z1)), YY), ZZ)
    return (T, Y3, Z3)


# -- the pass -----------------------------------------------------------------------------


def _parse_type(t: str):
    """('point', group, coords) | ('coord', group) | ('fq', field) from an MLIR type string."""
    parts = t.split('"')
    if t.startswith("!ec.point"):
        return ("point", parts[1], parts[3])
    if t.startswith("!ec.coord"):
        return ("coord", parts[1])
    if t.startswith("!field.elem"):
        return ("fq", parts[1])
    raise ValueError(f"ec-to-field: unexpected type {t}")


def _split(kind, degree, comps):
    """Flat components -> per-kind structure: point: tuple of coordinate tuples; coord: tuple; fq: id."""
    if kind[0] == "point":
        n = COORDS[kind[2]]
        return tuple(tuple(comps[i * degree:(i + 1) * degree]) for i in range(n))
    if kind[0] == "coord":
        return tuple(comps)
    return comps[0]


def _flat(kind, value):
    if kind[0] == "point":
        return [c for coord in value for c in coord]
    if kind[0] == "coord":
        return list(value)
    return [value]


def run(module) -> Program:
    """Lower the `@main` of a verified `ec` module to a field Program over Fq."""
    (fop,) = list(module.body.operations)
    block = fop.operation.regions[0].blocks[0]
    kinds = [_parse_type(str(a.type)) for a in block.arguments]
    gname = next((k[1] for k in kinds if k[0] != "fq"), None)
    if gname is None:
        for inner in block.operations:
            for r in inner.operation.results:
                k = _parse_type(str(r.type))
                if k[0] != "fq":
                    gname = k[1]
    if gname is None:
        raise ValueError("ec-to-field: the program names no group")
    G = group_record(gname)
    F = field_record(G.base_field)
    d = G.degree
    sizes = [(COORDS[k[2]] * d if k[0] == "point" else d if k[0] == "coord" else 1) for k in kinds]
    prog = Program(F, sum(sizes))
    if d == 1:
        C = FqOps(prog)
    else:
        from ..algebra.towers import tower
        C = Fq2Ops(prog, tower(G.tower).beta)
    a = C.const(G.a)
    values = {}
    pos = 0
    for arg, k, s in zip(block.arguments, kinds, sizes):
        values[arg] = _split(k, d, list(range(pos, pos + s)))
        pos += s

    for inner in block.operations:
        o = inner.operation
        name = o.name
        if name == "func.return":
            outs = []
            for v in o.operands:
                outs += _flat(_parse_type(str(v.type)), values[v])
            prog.outputs = tuple(outs)
            break
        ins = [values[v] for v in o.operands]
        in_kinds = [_parse_type(str(v.type)) for v in o.operands]
        res_kinds = [_parse_type(str(r.type)) for r in o.results]
        res = _lower_op(C, a, name, o, ins, in_kinds, res_kinds)
        if len(o.results) == 1:
            values[o.results[0]] = res
        else:
            for r, v in zip(o.results, res):
                values[r] = v
    return prog


def _lower_op(C, a, name, o, ins, in_kinds, res_kinds):
    rk = res_kinds[0]
    if name.startswith("field."):
        op = name.split(".", 1)[1]
        if op == "constant":
            return C.const1(int(str(o.attributes["value"]).strip('"')))
        fn = {"add": C.add1, "sub": C.sub1, "mul": C.mul1, "neg": C.neg1, "square": C.sqr1}[op]
        return fn(*ins)
    op = name.split(".", 1)[1]
    if op == "cadd": return C.add(*ins)
    if op == "csub": return C.sub(*ins)
    if op == "cmul": return C.mul(*ins)
    if op == "csquare": return C.sqr(ins[0])
    if op == "cneg": return C.neg(ins[0])
    if op == "cscale": return C.scale(ins[0], ins[1])
    if op == "cconst":
        return C.const(parse_const(str(o.attributes["value"]).strip('"'), C.degree))
    if op == "get":
        return ins[0][int(str(o.attributes["index"]).strip('"'))]
    if op == "make":
        return tuple(ins)
    if op == "part":
        return ins[0][int(str(o.attributes["index"]).strip('"'))]
    if op == "join":
        return tuple(ins)
    if op == "neg":
        P = ins[0]
        return (P[0], C.neg(P[1])) + tuple(P[2:])
    if op == "select":
        c, A, B = ins
        return tuple(C.add(b, C.scale(C.sub(x, b), c)) if x != b else b for x, b in zip(A, B))
    if op == "convert":
        src, dst = in_kinds[0][2], rk[2]
        return as_xyzz(C, src, ins[0]) if dst == "xyzz" else as_jacobian(C, src, ins[0])
    if op == "double":
        src, dst = in_kinds[0][2], rk[2]
        if dst == "xyzz":
            return xyzz_double(C, a, as_xyzz(C, src, ins[0]))
        return jacobian_double(C, a, as_jacobian(C, src, ins[0]))
    if op in ("add", "cross"):
        (k1, k2) = in_kinds[0][2], in_kinds[1][2]
        system = "jacobian" if "jacobian" in (k1, k2) else "xyzz"
        conv = as_jacobian if system == "jacobian" else as_xyzz
        P, Q = conv(C, k1, ins[0]), conv(C, k2, ins[1])
        if system == "xyzz":
            if op == "cross":
                return xyzz_cross(C, P, Q)[2:]
            return xyzz_add(C, P, Q)
        if op == "cross":
            return jacobian_cross(C, P, Q)[4:]
        return jacobian_add(C, P, Q)
    raise ValueError(f"ec-to-field: no lowering for {name}")
