"""The `ec` dialect and the tracer that turns Python point formulas into it.

An `EcProgram` is a straight-line program over three kinds of values of one
group G (`zktensor.algebra.curves`):

* points, `!ec.point<"bn254.g2", "xyzz">`, in one of the coordinate systems
  `affine` (x, y), `xyzz` (X, Y, ZZ, ZZZ with x = X/ZZ, y = Y/ZZZ,
  ZZ^3 = ZZZ^2; the identity has ZZ = ZZZ = 0) or `jacobian` (X, Y, Z with
  x = X/Z^2, y = Y/Z^3; the identity has Z = 0);
* coordinates, `!ec.coord<"bn254.g2">`: elements of the field the coordinates
  live in, Fq for G1 and Fq2 for G2;
* base-field values, `!field.elem<"bn254.fq">`, the `field` dialect's type,
  used for 0/1 masks (`ec.select`) and scalings (`ec.cscale`).

Like `zktensor.ir.program`, the tracer is plain Python (no MLIR), so the
program's text keys the kernel cache and a warm cache never loads the
bindings; `to_mlir()` writes the `ec` dialect (declared below in IRDL), which
`zktensor.passes.ec_to_field` lowers into the `field` dialect.

    def add_then_double(P, Q):          ec_program(bn254.g1 [..], xyzz, affine -> 1)
        return (P + Q).double()           %2 = ec.add %0, %1 : xyzz
                                          %3 = ec.double %2 : xyzz
                                          return %3

`ec.part`/`ec.join` take a coordinate apart into its Fq components and back
(conjugates and norms for inversions over Fq2).

Point ops (`ec.add`, `ec.double`, ...) are the *incomplete* formulas: they
are exact when no operand is the identity and, for `ec.add`, when P != ±Q.
`ec.cross` gives the two cross-multiplied coordinate differences (h, r) of P
and Q, zero exactly when P = Q (h = 0 alone: P = ±Q), so that the host can
find those cases and route them through `ec.double` or to the identity (see
`zktensor.points`).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from . import irdl
from .program import FIELD_OPS

COORDS = {"affine": 2, "xyzz": 4, "jacobian": 3}
KINDS = tuple(COORDS) + ("coord", "fq")

# result coordinate system of ec.add / ec.double, by operand systems
ADD_RESULT = {
    ("xyzz", "xyzz"): "xyzz", ("xyzz", "affine"): "xyzz", ("affine", "xyzz"): "xyzz",
    ("affine", "affine"): "xyzz",
    ("jacobian", "jacobian"): "jacobian", ("jacobian", "affine"): "jacobian",
    ("affine", "jacobian"): "jacobian",
}
DOUBLE_RESULT = {"xyzz": "xyzz", "affine": "xyzz", "jacobian": "jacobian"}
CONVERSIONS = {("affine", "xyzz"), ("affine", "jacobian"), ("xyzz", "jacobian"),
               ("jacobian", "xyzz"), ("xyzz", "xyzz"), ("jacobian", "jacobian")}

# the `ec` dialect: op -> (operands, results, attributes) as "name:var" (see `irdl`); p, q, r:
# points (each its own coordinate system), c: a coordinate, f: a base-field element,
# i, s: strings (a coordinate index, a constant's value)
_CBIN, _CUN = (("lhs:c", "rhs:c"), ("res:c",), ()), (("x:c",), ("res:c",), ())
EC_SIGNATURES = {
    "add": (("lhs:p", "rhs:q"), ("res:r",), ()),
    "double": (("x:p",), ("res:r",), ()),
    "neg": (("x:p",), ("res:p",), ()),
    "select": (("cond:f", "a:p", "b:p"), ("res:p",), ()),
    "convert": (("x:p",), ("res:r",), ()),
    "cross": (("lhs:p", "rhs:q"), ("h:c", "r:c"), ()),
    "get": (("x:p",), ("res:c",), ("index:i",)),
    "make": (("coords:*c",), ("res:p",), ()),
    "part": (("x:c",), ("res:f",), ("index:i",)),
    "join": (("parts:*f",), ("res:c",), ()),
    "cadd": _CBIN, "csub": _CBIN, "cmul": _CBIN, "csquare": _CUN, "cneg": _CUN,
    "cconst": ((), ("res:c",), ("value:s",)),
    "cscale": (("x:c", "s:f"), ("res:c",), ()),
}
_STR = '"#builtin.string"'
EC_TYPES = {"point": (("group", "g", _STR), ("coords", "c", _STR)), "coord": (("group", "g", _STR),)}
EC_BASES = {"p": "@ec::@point", "q": "@ec::@point", "r": "@ec::@point", "c": "@ec::@coord",
            "f": '"!field.elem"', "i": _STR, "s": _STR}
EC_IRDL = irdl.dialect("ec", EC_TYPES, EC_SIGNATURES, EC_BASES)

# op -> number of operands (None: variadic); base-field ops pass through as the `field` dialect's
EC_OPS = {op: irdl.arity(sig) for op, sig in EC_SIGNATURES.items()}
EC_OPS.update({f"field.{op}": FIELD_OPS[op] for op in ("add", "sub", "mul", "neg", "square", "constant")})


@dataclass(frozen=True)
class EcNode:
    op: str
    args: tuple[int, ...]
    kind: str                 # result kind: a coordinate system, "coord" or "fq"
    attr: object = None       # cconst/field.constant value, ec.get's coordinate index
    n_results: int = 1        # ec.cross has two


def group_digest(G) -> str:
    """What about the group the generated code depends on (moduli, coefficients, tower)."""
    from ..algebra.towers import tower
    beta = tower(G.tower).beta if G.degree == 2 else None
    text = f"{G.name}|{G.p}|{G.a}|{G.b}|{G.degree}|{beta}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class EcProgram:
    """A straight-line program over points, coordinates and base-field values of one group."""

    def __init__(self, group, input_kinds):
        for k in input_kinds:
            if k not in KINDS:
                raise ValueError(f"unknown input kind {k!r}; choose from {KINDS}")
        self.group = group
        self.input_kinds = tuple(input_kinds)
        self.nodes: list[EcNode] = []
        self.outputs: tuple = ()      # value ids, or (id, result index) for ec.cross

    @property
    def field(self):
        """The base field record: kernels take and return Fq limb tensors."""
        from ..algebra import field as field_record
        return field_record(self.group.base_field)

    @property
    def n_inputs(self) -> int:
        return len(self.input_kinds)

    def kind(self, vid) -> str:
        if isinstance(vid, tuple):
            return "coord"
        if vid < self.n_inputs:
            return self.input_kinds[vid]
        return self.nodes[vid - self.n_inputs].kind

    def add(self, op: str, args, kind: str, attr=None, n_results: int = 1) -> int:
        n = EC_OPS.get(op, -1)
        if n == -1 or (n is not None and len(args) != n):
            raise ValueError(f"bad ec op {op}{tuple(args)}")
        self.nodes.append(EcNode(op, tuple(args), kind, attr, n_results))
        return self.n_inputs + len(self.nodes) - 1

    # -- text ---------------------------------------------------------------
    def text(self) -> str:
        G = self.group
        lines = [f"ec_program({G.name} [{group_digest(G)}], {', '.join(self.input_kinds)} -> "
                 f"{len(self.outputs)})"]
        for i, n in enumerate(self.nodes):
            vid = self.n_inputs + i
            args = ", ".join(_ref(a) for a in n.args)
            attr = f" {{{n.attr}}}" if n.attr is not None else ""
            lhs = f"%{vid}:{n.n_results}" if n.n_results > 1 else f"%{vid}"
            lines.append(f"  {lhs} = {n.op if '.' in n.op else 'ec.' + n.op} {args}{attr} : {n.kind}".replace("  :", " :"))
        lines.append("  return " + ", ".join(_ref(o) for o in self.outputs))
        return "\n".join(lines)

    def key(self) -> str:
        return hashlib.sha256(self.text().encode()).hexdigest()[:20]

    __str__ = text

    def output_kinds(self) -> tuple[str, ...]:
        return tuple(self.kind(o) for o in self.outputs)

    # -- MLIR ---------------------------------------------------------------
    def type_of(self, kind: str) -> str:
        G = self.group
        if kind in COORDS:
            return f'!ec.point<"{G.name}", "{kind}">'
        if kind == "coord":
            return f'!ec.coord<"{G.name}">'
        return f'!field.elem<"{G.base_field}">'

    def to_mlir(self) -> str:
        """The program as an `ec`-dialect module (generic op syntax) with one @main."""
        ty = self.type_of
        args = ", ".join(f"%a{i}: {ty(k)}" for i, k in enumerate(self.input_kinds))
        res = ", ".join(ty(self.kind(o)) for o in self.outputs)
        out = ["module {", f"  func.func @main({args}) -> ({res}) {{"]
        for i, n in enumerate(self.nodes):
            vid = self.n_inputs + i
            ops = ", ".join(self._mref(a) for a in n.args)
            tin = ", ".join(ty(self.kind(a)) for a in n.args)
            if n.op.startswith("field."):
                name = n.op
                attr = f' {{value = "{n.attr}"}}' if n.op == "field.constant" else ""
            else:
                name = "ec." + n.op
                attr = ""
                if n.op == "cconst":
                    attr = f' {{value = "{_const_text(n.attr)}"}}'
                elif n.op in ("get", "part"):
                    attr = f' {{index = "{n.attr}"}}'
            if n.n_results > 1:
                rt = "(" + ", ".join([ty(n.kind)] * n.n_results) + ")"
                lhs = f"%v{vid}:{n.n_results}"
            else:
                rt = ty(n.kind)
                lhs = f"%v{vid}"
            out.append(f'    {lhs} = "{name}"({ops}){attr} : ({tin}) -> {rt}')
        outs = ", ".join(self._mref(o) for o in self.outputs)
        out.append(f"    func.return {outs} : {res}")
        out += ["  }", "}"]
        return "\n".join(out)

    def _mref(self, vid) -> str:
        if isinstance(vid, tuple):
            return f"%v{vid[0]}#{vid[1]}"
        return f"%a{vid}" if vid < self.n_inputs else f"%v{vid}"


def _ref(v) -> str:
    return f"%{v[0]}#{v[1]}" if isinstance(v, tuple) else f"%{v}"


def _const_text(value) -> str:
    return ",".join(str(int(c)) for c in value) if isinstance(value, tuple) else str(int(value))


def parse_const(text: str, degree: int):
    parts = [int(x) for x in text.split(",")]
    if degree == 1:
        return parts[0]
    return tuple(parts) if len(parts) == 2 else (parts[0], 0)


# -- tracing --------------------------------------------------------------------


class _Sym:
    __slots__ = ("prog", "id")

    def __init__(self, prog: EcProgram, id_):
        self.prog, self.id = prog, id_

    @property
    def kind(self) -> str:
        return self.prog.kind(self.id)

    def _same(self, other):
        if not isinstance(other, _Sym) or other.prog is not self.prog:
            raise TypeError("values from different traced programs (or not traced values)")
        return other


class FqSym(_Sym):
    """A traced base-field value (`!field.elem`): masks and scalings."""

    def _lift(self, o):
        if isinstance(o, int) and not isinstance(o, bool):
            return FqSym(self.prog, self.prog.add("field.constant", (), "fq", o % self.prog.group.p))
        if not isinstance(o, FqSym):
            raise TypeError(f"cannot mix a base-field value with {type(o).__name__}")
        return self._same(o)

    def _op(self, op, *others):
        args = (self.id,) + tuple(self._lift(o).id for o in others)
        return FqSym(self.prog, self.prog.add("field." + op, args, "fq"))

    def __add__(self, o): return self._op("add", o)
    def __radd__(self, o): return self._lift(o)._op("add", self)
    def __sub__(self, o): return self._op("sub", o)
    def __rsub__(self, o): return self._lift(o)._op("sub", self)
    def __mul__(self, o): return self._op("mul", o)
    def __rmul__(self, o): return self._lift(o)._op("mul", self)
    def __neg__(self): return self._op("neg")
    def square(self): return self._op("square")


class CoordSym(_Sym):
    """A traced coordinate-field value (Fq for G1, Fq2 for G2)."""

    def _lift(self, o):
        if isinstance(o, CoordSym):
            return self._same(o)
        if isinstance(o, int) and not isinstance(o, bool):
            return const(self.prog, o)
        if isinstance(o, tuple) and len(o) == 2:
            return const(self.prog, o)
        raise TypeError(f"cannot mix a coordinate value with {type(o).__name__}")

    def _op(self, op, *others):
        args = (self.id,) + tuple(self._lift(o).id for o in others)
        return CoordSym(self.prog, self.prog.add(op, args, "coord"))

    def __add__(self, o): return self._op("cadd", o)
    def __radd__(self, o): return self._lift(o)._op("cadd", self)
    def __sub__(self, o): return self._op("csub", o)
    def __rsub__(self, o): return self._lift(o)._op("csub", self)

    def __mul__(self, o):
        if isinstance(o, FqSym):
            return CoordSym(self.prog, self.prog.add("cscale", (self.id, self._same(o).id), "coord"))
        return self._op("cmul", o)

    def __rmul__(self, o):
        if isinstance(o, FqSym):
            return self * o
        return self._lift(o)._op("cmul", self)

    def __neg__(self): return self._op("cneg")
    def square(self): return self._op("csquare")

    def parts(self) -> tuple[FqSym, ...]:
        """The base-field components (c0,) or (c0, c1) of c0 + c1·u."""
        return tuple(FqSym(self.prog, self.prog.add("part", (self.id,), "fq", i))
                     for i in range(self.prog.group.degree))


def join(*parts: FqSym) -> CoordSym:
    """The coordinate with these base-field components (inverse of `parts()`)."""
    prog = parts[0].prog
    if len(parts) != prog.group.degree:
        raise ValueError(f"a {prog.group.name} coordinate has {prog.group.degree} components")
    return CoordSym(prog, prog.add("join", tuple(parts[0]._lift(p).id for p in parts), "coord"))


def const(prog: EcProgram, value) -> CoordSym:
    """A coordinate constant: an int (in Fq, embedded in Fq2 for G2) or a pair (c0, c1)."""
    p = prog.group.p
    if prog.group.degree == 1:
        if isinstance(value, tuple):
            raise TypeError("a G1 coordinate constant is an int")
        v = value % p
    else:
        v = (value[0] % p, value[1] % p) if isinstance(value, tuple) else (value % p, 0)
    return CoordSym(prog, prog.add("cconst", (), "coord", v))


class PointSym(_Sym):
    """A traced point; its `kind` is its coordinate system."""

    def __add__(self, o):
        o = self._same(o)
        kind = ADD_RESULT.get((self.kind, o.kind))
        if kind is None:
            raise TypeError(f"no addition formula for {self.kind} + {o.kind}")
        return PointSym(self.prog, self.prog.add("add", (self.id, o.id), kind))

    def __sub__(self, o):
        return self + (-o)

    def __neg__(self):
        return PointSym(self.prog, self.prog.add("neg", (self.id,), self.kind))

    def double(self) -> "PointSym":
        return PointSym(self.prog, self.prog.add("double", (self.id,), DOUBLE_RESULT[self.kind]))

    def to(self, kind: str) -> "PointSym":
        if kind == self.kind:
            return self
        if (self.kind, kind) not in CONVERSIONS:
            raise TypeError(f"no conversion from {self.kind} to {kind} without an inversion")
        return PointSym(self.prog, self.prog.add("convert", (self.id,), kind))

    def cross(self, o) -> tuple[CoordSym, CoordSym]:
        """(h, r): x- and y-coordinate differences, cross-multiplied to a common denominator."""
        o = self._same(o)
        vid = self.prog.add("cross", (self.id, o.id), "coord", n_results=2)
        return CoordSym(self.prog, (vid, 0)), CoordSym(self.prog, (vid, 1))

    def coords(self) -> tuple[CoordSym, ...]:
        return tuple(CoordSym(self.prog, self.prog.add("get", (self.id,), "coord", i))
                     for i in range(COORDS[self.kind]))


def select(cond: FqSym, a: PointSym, b: PointSym) -> PointSym:
    """a where cond = 1, b where cond = 0 (cond a base-field 0/1 value)."""
    if not isinstance(cond, FqSym):
        raise TypeError("select: the condition is a base-field (fq) value")
    a, b = cond._same(a), cond._same(b)
    if a.kind != b.kind:
        raise TypeError(f"select: {a.kind} and {b.kind} points")
    return PointSym(cond.prog, cond.prog.add("select", (cond.id, a.id, b.id), a.kind))


def make(kind: str, *coords: CoordSym) -> PointSym:
    """A point of coordinate system `kind` from its coordinates."""
    if len(coords) != COORDS[kind]:
        raise ValueError(f"a {kind} point has {COORDS[kind]} coordinates")
    prog = coords[0].prog
    ids = tuple(coords[0]._lift(c).id for c in coords)
    return PointSym(prog, prog.add("make", ids, kind))


def _sym(prog, vid, kind):
    if kind in COORDS:
        return PointSym(prog, vid)
    return CoordSym(prog, vid) if kind == "coord" else FqSym(prog, vid)


def trace(fn, group, input_kinds) -> EcProgram:
    """Run `fn` on symbolic values of the given kinds and record what it computes."""
    prog = EcProgram(group, input_kinds)
    out = fn(*(_sym(prog, i, k) for i, k in enumerate(prog.input_kinds)))
    outs = out if isinstance(out, tuple) else (out,)
    if not outs or not all(isinstance(o, _Sym) and o.prog is prog for o in outs):
        raise TypeError("a traced point function must return traced values (or a tuple of them)")
    prog.outputs = tuple(o.id for o in outs)
    return prog


def n_components(group, kind: str) -> int:
    """How many base-field (Fq) words-vectors a value of this kind occupies."""
    if kind in COORDS:
        return COORDS[kind] * group.degree
    return group.degree if kind == "coord" else 1
