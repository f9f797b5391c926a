"""Tracing a Python function over field values into a `Program`.

A `Program` is the front end's record of what the user wrote: a straight-line
list of field operations over numbered inputs. It is plain Python (no MLIR),
so that its text can key the kernel cache and a warm cache never imports the
MLIR bindings. `zktensor.passes.field_io` writes it as `field` dialect text
(`FieldFunc.from_program`), where the passes take over.

    @zt.jit
    def f(a, b, c):
        return a * b - c * c

traces to

    program(bn254.fr, 3 -> 1)
      %3 = field.mul %0, %1
      %4 = field.mul %2, %2
      %5 = field.sub %3, %4
      return %5
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..algebra import Field
from .irdl import arity

# the `field` dialect: op -> (operands, results, attributes) as "name:var" (see `irdl`);
# t: a field element, s: a decimal string. `attr` of a Node carries the integer of
# field.constant (the value, standard form) and field.pow (the exponent).
_BIN, _UN = (("lhs:t", "rhs:t"), ("res:t",), ()), (("x:t",), ("res:t",), ())
FIELD_SIGNATURES = {
    "constant": ((), ("res:t",), ("value:s",)),
    "add": _BIN, "sub": _BIN, "mul": _BIN, "neg": _UN, "square": _UN,
    "pow": (("x:t",), ("res:t",), ("exponent:s",)),
    # Montgomery-form conversions at program boundaries; raw limbs in/out.
    "to_mont": _UN, "from_mont": _UN,
}
FIELD_TYPES = {"elem": (("name", "name", '"#builtin.string"'),)}
FIELD_BASES = {"t": "@field::@elem", "s": '"#builtin.string"'}
# op name -> number of value operands
FIELD_OPS = {op: arity(sig) for op, sig in FIELD_SIGNATURES.items()}


@dataclass(frozen=True)
class Node:
    op: str
    args: tuple[int, ...]
    attr: int | None = None


class Program:
    """A straight-line field program: inputs are values 0..n_inputs-1."""

    def __init__(self, field: Field, n_inputs: int):
        self.field = field
        self.n_inputs = n_inputs
        self.nodes: list[Node] = []
        self.outputs: tuple[int, ...] = ()

    def add(self, op: str, args: tuple[int, ...], attr: int | None = None) -> int:
        if op not in FIELD_OPS or len(args) != FIELD_OPS[op]:
            raise ValueError(f"bad field op {op}{args}")
        self.nodes.append(Node(op, args, attr))
        return self.n_inputs + len(self.nodes) - 1

    def text(self) -> str:
        lines = [f"program({self.field.name}, {self.n_inputs} -> {len(self.outputs)})"]
        for i, n in enumerate(self.nodes):
            args = ", ".join(f"%{a}" for a in n.args)
            attr = f" {{{n.attr}}}" if n.attr is not None else ""
            lines.append(f"  %{self.n_inputs + i} = field.{n.op} {args}{attr}".rstrip())
        lines.append("  return " + ", ".join(f"%{o}" for o in self.outputs))
        return "\n".join(lines)

    def key(self) -> str:
        return hashlib.sha256(self.text().encode()).hexdigest()[:20]

    __str__ = text


class Sym:
    """A traced field value: arithmetic on it records nodes in a Program."""

    __slots__ = ("prog", "id")

    def __init__(self, prog: Program, id_: int):
        self.prog, self.id = prog, id_

    def _lift(self, other) -> "Sym":
        if isinstance(other, Sym):
            if other.prog is not self.prog:
                raise ValueError("values from different traced programs")
            return other
        if isinstance(other, int) and not isinstance(other, bool):
            return Sym(self.prog, self.prog.add("constant", (), other % self.prog.field.p))
        raise TypeError(f"cannot mix a traced {self.prog.field.name} value with {type(other).__name__}")

    def _op(self, op, *others, attr=None):
        args = (self.id,) + tuple(self._lift(o).id for o in others)
        return Sym(self.prog, self.prog.add(op, args, attr))

    def __add__(self, o): return self._op("add", o)
    def __radd__(self, o): return self._lift(o)._op("add", self)
    def __sub__(self, o): return self._op("sub", o)
    def __rsub__(self, o): return self._lift(o)._op("sub", self)
    def __mul__(self, o): return self._op("mul", o)
    def __rmul__(self, o): return self._lift(o)._op("mul", self)
    def __neg__(self): return self._op("neg")

    def square(self): return self._op("square")

    def __pow__(self, e: int):
        if not isinstance(e, int) or e < 0:
            raise ValueError("exponent must be a non-negative int")
        return self._op("pow", attr=e)

    def inverse(self):
        """x^(p-2): the inverse of a non-zero value (zero maps to zero)."""
        return self ** (self.prog.field.p - 2)


def trace(fn, field: Field, n_inputs: int) -> Program:
    """Run `fn` on symbolic values and record what it computes."""
    prog = Program(field, n_inputs)
    out = fn(*(Sym(prog, i) for i in range(n_inputs)))
    outs = out if isinstance(out, tuple) else (out,)
    if not outs or not all(isinstance(o, Sym) for o in outs):
        raise TypeError("a traced function must return field values (or a tuple of them)")
    prog.outputs = tuple(o.id for o in outs)
    return prog
