"""limbs-to-triton: print limb kernels as Triton source.

Input: the limb module from field-to-limbs (functions over i32 storage words
with `arith`/`math`/`scf` bodies). Output: Python source defining, for each
`@kernel_N`:

- `kernel_N_fn(a0_0, ..., )`: a `@triton.jit` device function over blocks of
  words (uint32), returning the result words — what kernel templates (NTT
  butterflies, bucket sums) call;
- `kernel_N(...)`: an elementwise kernel over a 2-D strided batch. Each
  operand X is addressed as X + limb·ls_X + outer·os_X + inner·is_X, with
  limb-major storage (ls_X = the limb stride), so contiguous tensors,
  broadcasts (stride 0) and the strided halves of an NTT stage all run in
  place without copies.

Types: i32 words are `tl.uint32` (unsigned compares and shifts), i64 is
`tl.int64`, f64 is `tl.float64`. `arith.mului_extended` on i32 becomes
`a * b` and `tl.umulhi(a, b)`. A `math.fma` marked `zktensor.round_down` (the
fp64 split's high half, always fma(a, b, 2^104)) becomes `fma_rd_2p104(a, b, c)`, one
of the module's own functions (`HEADER`): libdevice's fma_rd (one DFMA.RM) when
compiled, and under the interpreter, which has no libdevice, the round-to-nearest
fma stepped down one ulp where it rounded up.

    %v3:2 = "arith.mului_extended"(%a0_0, %a1_0)      v3_0 = a0_0 * a1_0
          : (i32, i32) -> (i32, i32)            ->    v3_1 = tl.umulhi(a0_0, a1_0)
"""
from __future__ import annotations

from ..ir import dialects
from ..ir.builder import ROUND_DOWN
from .limb_arith import TWO104

TL = {"i32": "tl.uint32", "i64": "tl.int64", "f64": "tl.float64", "i1": "tl.int1"}
UNSIGNED = {"i32": None, "i64": "tl.uint64"}   # how to view a type unsigned
SIGNED = {"i32": "tl.int32", "i64": None}


def _as(x, view):
    return x if view is None else f"{x}.to({view}, bitcast=True)"


def _back(expr, t, view):
    return expr if view is None else f"({expr}).to({TL[t]}, bitcast=True)"


class _Printer:
    def __init__(self, block_ref="a0_0"):
        self.block_ref = block_ref
        self.names = {}
        self.lines = []
        self.count = 0
        self.literals = {}     # value -> Python literal of an integer constant
        self.floats = {}       # value -> an f64 constant's value

    def name(self, v):
        return self.names[v]

    def bind(self, v, hint="v"):
        self.count += 1
        n = f"{hint}{self.count}"
        self.names[v] = n
        return n

    def emit(self, indent, line):
        self.lines.append("    " * indent + line)

    def block(self, ops, indent):
        ir = dialects.mlir()[0]
        for op in ops:
            o = op.operation
            name = o.name
            ins = [self.name(v) for v in o.operands]
            if name == "func.return":
                return ins
            if name == "scf.yield":
                return ins
            if name == "scf.for":
                self._for(o, ins, indent)
                continue
            t = str(o.results[0].type)
            if name == "arith.constant":
                attr = o.attributes["value"]
                if t == "f64":
                    self.floats[o.results[0]] = ir.FloatAttr(attr).value
                    value = repr(self.floats[o.results[0]])
                elif t == "index":
                    value = str(ir.IntegerAttr(attr).value)
                    self.names[o.results[0]] = value
                    continue
                else:
                    value = ir.IntegerAttr(attr).value
                    if t == "i32":
                        value &= 0xFFFFFFFF
                    self.literals[o.results[0]] = value
                    value = str(int(value))
                self.emit(indent, f"{self.bind(o.results[0], 'c')} = tl.full([], {value}, {TL[t]})")
                continue
            if name == "arith.mului_extended":
                if t != "i32":
                    raise NotImplementedError("limbs-to-triton: 64-bit limbs are a CPU strategy")
                lo, hi = self.bind(o.results[0]), self.bind(o.results[1])
                self.emit(indent, f"{lo} = {ins[0]} * {ins[1]}")
                self.emit(indent, f"{hi} = tl.umulhi({ins[0]}, {ins[1]})")
                continue
            if name == "arith.addui_extended":
                s, c = self.bind(o.results[0]), self.bind(o.results[1])
                self.emit(indent, f"{s} = {ins[0]} + {ins[1]}")
                self.emit(indent, f"{c} = {_as(s, UNSIGNED.get(t))} < {_as(ins[0], UNSIGNED.get(t))}")
                continue
            expr = self._expr(o, name, t, ins)
            self.emit(indent, f"{self.bind(o.results[0])} = {expr}")
        return []

    def _shift_amount(self, v, name):
        return str(self.literals[v]) if v in self.literals else name

    def _expr(self, o, name, t, ins):
        a = ins[0] if ins else None
        b = ins[1] if len(ins) > 1 else None
        binops = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.andi": "&",
                  "arith.ori": "|", "arith.xori": "^", "arith.addf": "+", "arith.subf": "-"}
        if name in binops:
            return f"{a} {binops[name]} {b}"
        if name in ("arith.shli", "arith.shrui", "arith.shrsi"):
            k = self._shift_amount(o.operands[1], b)
            if name == "arith.shli":
                return f"{a} << {k}"
            view = UNSIGNED[t] if name == "arith.shrui" else SIGNED[t]
            return _back(f"{_as(a, view)} >> {k}", t, view)
        if name == "arith.cmpi":
            pred = int(str(o.attributes["predicate"]).split(":")[0])
            ta = str(o.operands[0].type)
            view = {6: UNSIGNED, 2: SIGNED}.get(pred, {}).get(ta)
            op = {6: "<", 2: "<", 0: "==", 1: "!="}[pred]
            return f"{_as(a, view)} {op} {_as(b, view)}"
        if name == "arith.select":
            return f"tl.where({a}, {b}, {ins[2]})"
        if name == "arith.extui":
            return f"{a}.to({TL[t]})"
        if name == "arith.trunci":
            if t == "i1":
                return f"({a} & 1) != 0"
            return f"{a}.to({TL[t]})"
        if name == "arith.sitofp":
            return f"{a}.to(tl.float64)"
        if name == "arith.bitcast":
            return f"{a}.to({TL[t]}, bitcast=True)"
        if name == "math.fma":
            if ROUND_DOWN not in o.attributes:
                return f"tl.fma({a}, {b}, {ins[2]})"
            if self.floats.get(o.operands[2]) != TWO104:
                raise NotImplementedError("limbs-to-triton: a rounded-down fma is the split's "
                                          "fma(a, b, 2^104) only")
            return f"fma_rd_2p104({a}, {b}, {ins[2]})"
        raise NotImplementedError(f"limbs-to-triton: no rule for {name}")

    def _for(self, o, ins, indent):
        lb, ub = ins[0], ins[1]
        body = o.regions[0].blocks[0]
        carried = [self.bind(r, "l") for r in o.results]
        # compiled Triton needs loop-carried values of one type: give constant
        # (0-d) initial values the block shape of the function's first operand.
        # Builtins only: a @triton.jit library function (tl.zeros_like) called from
        # a device function fails now and then under the interpreter (Triton 3.9).
        for n, init in zip(carried, ins[3:]):
            self.emit(indent, f"{n} = tl.broadcast_to({init}, {self.block_ref}.shape)")
        iv = self.bind(body.arguments[0], "i")
        for arg, n in zip(list(body.arguments)[1:], carried):
            self.names[arg] = n
        self.emit(indent, f"for {iv} in range({lb}, {ub}):")
        yielded = self.block(body.operations, indent + 1)
        self.emit(indent + 1, f"{', '.join(carried)} = {', '.join(yielded)}")


def _kernel_source(func) -> str:
    op = func.operation
    name = str(op.attributes["sym_name"]).strip('"')
    L = int(str(op.attributes["zktensor.limbs"]).split(":")[0])
    n_in = int(str(op.attributes["zktensor.inputs"]).split(":")[0])
    n_out = int(str(op.attributes["zktensor.outputs"]).split(":")[0])
    block = op.regions[0].blocks[0]
    pr = _Printer()
    params = []
    for i in range(n_in):
        for j in range(L):
            pr.names[block.arguments[i * L + j]] = f"a{i}_{j}"
            params.append(f"a{i}_{j}")
    results = pr.block(block.operations, 1)
    fn = ["@triton.jit", f"def {name}_fn({', '.join(params)}):"] + pr.lines
    fn.append(f"    return {', '.join(results)}" + ("," if len(results) == 1 else ""))

    ops = [f"o{k}" for k in range(n_out)] + [f"i{k}" for k in range(n_in)]
    sig = ", ".join(f"{x}, ls_{x}, os_{x}, is_{x}" for x in ops)
    k = ["@triton.jit",
         f"def {name}({sig}, n_inner, n_total, BLOCK: tl.constexpr):",
         "    e = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
         "    m = e < n_total",
         "    eo = e // n_inner",
         "    ei = e - eo * n_inner"]
    for x in ops:
        k.append(f"    b_{x} = eo * os_{x} + ei * is_{x}")
    for i in range(n_in):
        for j in range(L):
            k.append(f"    a{i}_{j} = tl.load(i{i} + b_i{i} + {j} * ls_i{i}, mask=m).to(tl.uint32, bitcast=True)")
    outs = [f"r{q}" for q in range(n_out * L)]
    k.append(f"    {', '.join(outs)}{',' if len(outs) == 1 else ''} = {name}_fn({', '.join(params)})")
    for q in range(n_out):
        for j in range(L):
            k.append(f"    tl.store(o{q} + b_o{q} + {j} * ls_o{q}, r{q * L + j}.to(tl.int32, bitcast=True), mask=m)")
    return "\n".join(fn) + "\n\n\n" + "\n".join(k) + "\n"


# What every generated module starts with (after its docstring); modules that splice device
# functions from several programs (ntt_triton, msm_device, sparse_device) write it once.
HEADER = f"""import os

import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def fma_rd_2p104_device(a, b, c):
    return libdevice.fma_rd(a, b, c)


def fma_rd_2p104_interpreted(a, b, c):
    # c = 2^104 > a·b >= 0: the sum's ulp is 2^52, c - r is exact, and so is the second
    # fma, a·b + c - r (r's rounding error, below 2^51), whose sign says whether r rounded
    # up. A plain function, not a device function: the interpreter runs its tl calls as
    # they are, without the per-call argument handling that a device function costs it
    r = tl.fma(a, b, c)
    return tl.where(tl.fma(a, b, c - r) < 0.0, r - {2.0 ** 52!r}, r)


fma_rd_2p104 = fma_rd_2p104_interpreted if os.environ.get("TRITON_INTERPRET") == "1" else fma_rd_2p104_device
"""


def kernels_of(source: str) -> str:
    """A generated module's source from its first kernel function on (HEADER left out)."""
    return source[source.index("@triton.jit\ndef kernel_"):]


def run(module) -> str:
    """Triton source for every kernel function in a limb module."""
    parts = ['"""Generated by zktensor (limbs-to-triton). Do not edit: the kernel cache rewrites it."""',
             HEADER]
    for func in module.body.operations:
        parts.append(_kernel_source(func))
    return "\n\n".join(parts)
