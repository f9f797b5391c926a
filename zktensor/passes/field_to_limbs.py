"""field-to-limbs: lower `field` kernels to integer/float limb arithmetic.

Input: `@kernel_N` functions over `!field.elem<"F">` (from fuse-elementwise).
Output: functions over the storage words — each field argument and result
becomes L32 `i32` words (limb 0 least significant, Montgomery form) — whose
bodies are `arith`/`math`/`scf` ops. Options: `strategy` = `int32` (32-bit
limbs, CIOS), `int64` (64-bit limbs, CIOS; the CPU's machine word) or `fp64`
(52-bit limbs multiplied through FMA-split doubles). See `limb_arith`.

    %2 = "field.add"(%0, %1)          %v9:2 = "arith.addui_extended"(%a0, %b0) : (i32, i32) -> (i32, i1)
        : (!field.elem<"bn254.fr">,  ->  ... (carry chain, subtract p, select)
           !field.elem<"bn254.fr">)     func.return %r0, ..., %r7 : i32, ..., i32
        -> !field.elem<"bn254.fr">

`field.pow` by a constant exponent becomes square-and-multiply: straight-line
for exponents below 2^8, else one `scf.for` of 32 steps per 32-bit chunk of
the exponent (the chunk shifts left each step; its top bit selects the
multiply), which keeps x^(p-2) small enough to compile quickly.
`field.to_mont`/`field.from_mont` multiply by R^2 and by 1 (raw Montgomery
product), converting standard-form words at a program's edge.

Values read only by products stay unreduced where the strategy allows it
(`lazy_values`; fp64: in [0, 2p), see `limb_arith`): `(a - b)·c` lowers its
difference to one carry chain of a - b + p instead of a borrow test and a
conditional add of p, and `(a·b)·c` skips a·b's conditional subtraction. Results
and values read by anything else are reduced, so stored words are canonical.
Point formulas are long chains of differences and products, so the saved
reductions add up in the MSM's kernels.
"""
from __future__ import annotations

from ..algebra import field as field_record
from ..ir.builder import Emitter, V
from .field_io import FieldFunc
from .limb_arith import limb_arith

STRAIGHT_LINE_POW_BITS = 8


class _OutlinedMul:
    """A.mul/square as calls to one shared `@fmul...` function (kept out of line)."""

    def __init__(self, A, e, name):
        self.A, self.e, self.name = A, e, name
        self.lazy_ops = A.lazy_ops - {"mul", "square"}     # the one function reduces

    def __getattr__(self, item):
        return getattr(self.A, item)

    def mul(self, a, b):
        t = a[0].type
        res = self.e.op("func.call", list(a) + list(b), [t] * len(a), f"callee = @{self.name}, no_inline")
        return list(res) if isinstance(res, tuple) else [res]

    def square(self, a):
        return self.mul(a, a)


def _mul_function(F, strategy, lanes, ifma, name) -> str:
    e = Emitter(prefix="m", lanes=lanes)
    A = limb_arith(strategy, e, F, ifma=ifma)
    t = A.zero.type
    a = [V(f"%x{j}", t) for j in range(A.n)]
    b = [V(f"%y{j}", t) for j in range(A.n)]
    r = A.mul(a, b)
    args = ", ".join(f"{v.name}: {e.ty(t)}" for v in a + b)
    types = ", ".join([e.ty(t)] * A.n)
    return "\n".join([f"  func.func private @{name}({args}) -> ({types}) {{", e.text(),
                      f"    func.return {', '.join(v.name for v in r)} : {types}", "  }"])


def lower_func(f: FieldFunc, strategy: str, lanes: int = 1, ifma: bool = False,
               outline: str | None = None, round_down: bool = False) -> str:
    F = field_record(f.field)
    e = Emitter(lanes=lanes)
    A = limb_arith(strategy, e, F, ifma=ifma, round_down=round_down)
    if outline:
        A = _OutlinedMul(A, e, outline)
    L = F.limbs32
    words = [[V(f"%a{i}_{j}", "i32") for j in range(L)] for i in range(f.n_args)]
    vals: dict[int, list[V]] = {i: A.from_words(words[i]) for i in range(f.n_args)}
    lower_nodes(A, F, e, f, vals)
    outs = [w for o in f.outputs for w in A.to_words(vals[o])]
    args = ", ".join(f"{w.name}: {e.ty('i32')}" for ws in words for w in ws)
    rtypes = ", ".join([e.ty("i32")] * len(outs))
    attrs = dict(f.attrs)
    attrs.update({"zktensor.field": f'"{F.name}"', "zktensor.strategy": f'"{strategy}"',
                  "zktensor.limbs": f"{L} : i64", "zktensor.inputs": f"{f.n_args} : i64",
                  "zktensor.outputs": f"{len(f.outputs)} : i64", "zktensor.lanes": f"{lanes} : i64"})
    attr_s = ", ".join(f"{k} = {v}" for k, v in attrs.items())
    return "\n".join([
        f"  func.func @{f.name}{'' if lanes == 1 else f'_v{lanes}'}({args}) -> ({rtypes}) attributes {{{attr_s}}} {{",
        e.text(),
        f"    func.return {', '.join(w.name for w in outs)} : {rtypes}",
        "  }",
    ])


PRODUCTS = frozenset(("mul", "square"))


def lazy_values(f: FieldFunc, ops: frozenset) -> set[int]:
    """The values of f that may stay unreduced (in [0, 2p), see `limb_arith`): made by an
    op in `ops`, read only by products, and not a result. Their readers then take one
    conditional subtraction fewer each, e.g. in an affine addition

        dy = y2 - y1            read by lambda = dy·inv only: lazy (a - b + p, no borrow test)
        lambda = dy·inv         read by lambda² and lambda·(x1 - x3) only: lazy
        x3 = lambda² - x1 - x2  a result: reduced"""
    if not ops:
        return set()
    readers: dict[int, set[str]] = {}
    for n in f.nodes:
        for a in n.args:
            readers.setdefault(a, set()).add(n.op)
    outs = set(f.outputs)
    return {f.n_args + k for k, n in enumerate(f.nodes)
            if n.op in ops and f.n_args + k not in outs and readers.get(f.n_args + k, {"-"}) <= PRODUCTS}


def lower_nodes(A, F, e: Emitter, f: FieldFunc, vals: dict) -> None:
    """Lower f's nodes in order into vals (value id -> limbs), the inputs already there."""
    lazy = lazy_values(f, A.lazy_ops)
    for k, n in enumerate(f.nodes):
        vid = f.n_args + k
        vals[vid] = _lower_node(A, F, e, n, [vals[a] for a in n.args], vid not in lazy)


def _lower_node(A, F, e: Emitter, n, args, reduce: bool = True):
    if n.op == "constant":
        return A.constant(n.attr)
    if n.op in ("add", "sub", "mul"):
        return getattr(A, n.op)(*args) if reduce else getattr(A, n.op)(*args, reduce=False)
    if n.op in ("neg", "square"):
        return getattr(A, n.op)(args[0]) if reduce else getattr(A, n.op)(args[0], reduce=False)
    if n.op == "to_mont":      # standard x -> x·R: Montgomery product with R^2
        return A.mul(args[0], A.constant(F.R))
    if n.op == "from_mont":    # x·R -> x: Montgomery product with 1
        one = [A.zero] * A.n
        one = [e.const(1, one[0].type)] + one[1:]
        return A.mul(args[0], one)
    if n.op == "pow":
        return _pow(A, e, args[0], n.attr)
    raise ValueError(f"field-to-limbs: no lowering for field.{n.op}")


def _pow(A, e: Emitter, x, exp: int):
    acc = A.constant(1)
    if exp.bit_length() <= STRAIGHT_LINE_POW_BITS:
        for bit in bin(exp)[2:]:
            acc = A.square(acc)
            if bit == "1":
                acc = A.mul(acc, x)
        return acc
    n_chunks = -(-exp.bit_length() // 32)
    for c in reversed(range(n_chunks)):
        chunk = e.const((exp >> (32 * c)) & 0xFFFFFFFF, "i32")

        def step(carried):
            acc, word = carried[:-1], carried[-1]
            bit = e.trunc(e.shr(word, 31), "i1")
            acc = A.square(acc)
            prod = A.mul(acc, x)
            return [e.select(bit, p, a) for p, a in zip(prod, acc)] + [e.shl(word, 1)]

        out = e.for_loop(32, acc + [chunk], step)
        acc = out[:-1]
    return acc


def run(funcs: list[FieldFunc], strategy: str, lanes: int = 1, ifma: bool = False,
        outline_mul: bool = False, round_down: bool = False) -> str:
    """Scalar kernels, plus `@kernel_N_v<lanes>` vector twins when lanes > 1
    (the same lowering on vector<lanes x T>; `ifma` takes fp64 products from IFMA).
    `outline_mul` makes every multiplication a call to one `@fmul` function per
    variant: for wide fields it bounds code size (and LLVM's compile time) by
    the number of ops rather than ops x the size of a multiplication. `round_down`
    (fp64, a GPU target): the FMA split rounds its high half down (`limb_arith`)."""
    kernels = [f for f in funcs if f.name != "main"]
    F = field_record(kernels[0].field)
    variants = [(1, False)] + ([(lanes, ifma)] if lanes > 1 else [])
    out = []
    for n_lanes, use_ifma in variants:
        name = f"fmul_{strategy}_l{n_lanes}" if outline_mul else None
        if name:
            out.append(_mul_function(F, strategy, n_lanes, use_ifma, name))
        out += [lower_func(f, strategy, n_lanes, use_ifma, name, round_down) for f in kernels]
    return "module {\n" + "\n".join(out) + "\n}"
