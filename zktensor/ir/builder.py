"""Writing MLIR text: SSA names, types and the `arith`/`math` ops the lowerings use.

Passes read their input through the MLIR bindings and write their output
through an `Emitter`, in MLIR's generic op syntax; the result is parsed and
verified again, so each stage is real, checked IR. The helpers fold the
trivial cases (adding a known zero, a carry known to be false) so that the
printed IR stays readable.
"""
from __future__ import annotations

import struct


ROUND_DOWN = "zktensor.round_down"   # a unit attribute on math.fma: rounded toward -inf


class V:
    """An SSA value: its name, MLIR type and, when known, its constant value."""

    __slots__ = ("name", "type", "const")

    def __init__(self, name: str, type_: str, const=None):
        self.name, self.type, self.const = name, type_, const

    def __repr__(self):
        return f"{self.name}:{self.type}"


def int_bits(type_: str) -> int:
    return int(type_[1:])


def f64_literal(x: float) -> str:
    """Exact f64 literal as its bit pattern (MLIR accepts hex for floats)."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", x))[0]


class Emitter:
    def __init__(self, prefix: str = "v", lanes: int = 1):
        self.lanes = lanes                 # >1: every value is a vector of this many lanes
        self.lines: list[str] = []
        self.const_lines: list[str] = []   # hoisted: constants dominate every region
        self.prefix = prefix
        self.count = 0
        self._consts: dict[tuple, V] = {}

    def fresh(self) -> str:
        self.count += 1
        return f"%{self.prefix}{self.count}"

    def op(self, name: str, args, rtypes, attrs: str = ""):
        """Emit a generic-form op; returns one V or a tuple for several results."""
        rtypes = [rtypes] if isinstance(rtypes, str) else list(rtypes)
        res = self.fresh()
        lhs = f"{res}:{len(rtypes)} = " if len(rtypes) > 1 else (f"{res} = " if rtypes else "")
        arg_s = ", ".join(a.name for a in args)
        types_in = ", ".join(self.ty(a.type) for a in args)
        attr_s = f" {{{attrs}}}" if attrs else ""
        rt = self.ty(rtypes[0]) if len(rtypes) == 1 else f"({', '.join(map(self.ty, rtypes))})"
        self.lines.append(f'{lhs}"{name}"({arg_s}){attr_s} : ({types_in}) -> {rt if rtypes else "()"}')
        if len(rtypes) == 1:
            return V(res, rtypes[0])
        return tuple(V(f"{res}#{i}", t) for i, t in enumerate(rtypes))

    def ty(self, type_: str) -> str:
        """How a scalar type prints: itself, or a vector of `lanes` of it."""
        return f"vector<{self.lanes}x{type_}>" if self.lanes > 1 and type_ != "index" else type_

    # -- constants -----------------------------------------------------------
    def const(self, value, type_: str) -> V:
        key = (value, type_)
        if key not in self._consts:
            if type_ == "f64":
                lit = f64_literal(value)
            elif type_ == "i1":
                lit = "true" if value else "false"
            elif type_ == "index":
                lit = f"{value}"
            else:
                bits = int_bits(type_)
                v = value % (1 << bits)
                lit = f"{v - (1 << bits) if v >> (bits - 1) else v}"
            t = self.ty(type_)
            if t != type_:
                lit = f"dense<{lit}> : {t}"
            elif type_ != "i1":
                lit = f"{lit} : {t}"
            body, self.lines = self.lines, self.const_lines
            v = self.op("arith.constant", [], type_, f"value = {lit}")
            self.lines = body
            v.const = value
            self._consts[key] = v
        return self._consts[key]

    # -- integer ops ---------------------------------------------------------
    def _bin(self, name, a, b):
        return self.op(name, [a, b], a.type)

    def add(self, a, b):
        if b.const == 0: return a
        if a.const == 0: return b
        return self._bin("arith.addi", a, b)

    def sub(self, a, b):
        return a if b.const == 0 else self._bin("arith.subi", a, b)

    def mul(self, a, b): return self._bin("arith.muli", a, b)
    def and_(self, a, b): return self._bin("arith.andi", a, b)

    def or_(self, a, b):
        if b.const == 0 and b.type == a.type: return a
        if a.const == 0 and b.type == a.type: return b
        return self._bin("arith.ori", a, b)

    def xor(self, a, b): return self._bin("arith.xori", a, b)

    def shl(self, a, k: int):
        return a if k == 0 else self._bin("arith.shli", a, self.const(k, a.type))

    def shr(self, a, k: int):  # logical
        return a if k == 0 else self._bin("arith.shrui", a, self.const(k, a.type))

    def sar(self, a, k: int):  # arithmetic
        return a if k == 0 else self._bin("arith.shrsi", a, self.const(k, a.type))

    def ult(self, a, b): return self.op("arith.cmpi", [a, b], "i1", "predicate = 6 : i64")
    def slt(self, a, b): return self.op("arith.cmpi", [a, b], "i1", "predicate = 2 : i64")

    def select(self, c, a, b): return self.op("arith.select", [c, a, b], a.type)

    def zext(self, a, type_):
        if a.type == type_: return a
        if a.const is not None: return self.const(int(a.const), type_)
        return self.op("arith.extui", [a], type_)

    def trunc(self, a, type_):
        return a if a.type == type_ else self.op("arith.trunci", [a], type_)

    def mul_wide(self, a, b):
        """(lo, hi) of the full unsigned product."""
        return self.op("arith.mului_extended", [a, b], [a.type, a.type])

    def add_carry(self, a, b):
        """(sum, carry-out as i1)."""
        if b.const == 0: return a, self.const(0, "i1")
        if a.const == 0: return b, self.const(0, "i1")
        return self.op("arith.addui_extended", [a, b], [a.type, "i1"])

    # -- floating point ------------------------------------------------------
    def fma(self, a, b, c): return self.op("math.fma", [a, b, c], "f64")

    def fma_down(self, a, b, c):
        """fma rounded toward -inf (a GPU's fma.rm): `math.fma` has no rounding mode, so the
        op carries ROUND_DOWN, which limbs-to-triton prints and the CPU lowerings refuse."""
        return self.op("math.fma", [a, b, c], "f64", ROUND_DOWN)
    def fsub(self, a, b): return self.op("arith.subf", [a, b], "f64")
    def fadd(self, a, b): return self.op("arith.addf", [a, b], "f64")
    def sitofp(self, a): return self.op("arith.sitofp", [a], "f64")
    def bitcast(self, a, type_): return self.op("arith.bitcast", [a], type_)

    # -- structured control flow -----------------------------------------------
    def for_loop(self, count: int, carried: list[V], body) -> list[V]:
        """`scf.for` of `count` iterations; body(carried) -> new carried values."""
        lb, ub, step = (self.const(x, "index") for x in (0, count, 1))
        res = self.fresh()
        iv = self.fresh()
        args = [V(self.fresh(), v.type) for v in carried]
        outer, self.lines = self.lines, []
        new = body(args)
        inner, self.lines = self.lines, outer
        types = ", ".join(self.ty(v.type) for v in carried)
        head = ", ".join(f"{a.name}: {self.ty(a.type)}" for a in args)
        self.lines.append(
            f'{res}:{len(carried)} = "scf.for"({lb.name}, {ub.name}, {step.name}, '
            f'{", ".join(v.name for v in carried)}) ({{')
        self.lines.append(f"^bb0({iv}: index, {head}):")
        self.lines += ["  " + line for line in inner]
        self.lines.append(f'  "scf.yield"({", ".join(v.name for v in new)}) : ({types}) -> ()')
        self.lines.append(f"}}) : (index, index, index, {types}) -> ({types})")
        return [V(f"{res}#{i}", v.type) for i, v in enumerate(carried)]

    def text(self, indent: str = "    ") -> str:
        return "\n".join(indent + line for line in self.const_lines + self.lines)
