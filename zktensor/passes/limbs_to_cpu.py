"""limbs-to-cpu: wrap limb kernels in element loops and lower them to machine code.

Input: the limb module from field-to-limbs. Output: a shared object holding,
for each `@kernel_N`, a C-callable

    void kernel_N_run(o0, ls_o0, os_o0, is_o0, ..., i0, ls_i0, ..., o_begin, o_end, n_inner)

that runs the limb function for every element of the 2-D strided batch rows
[o_begin, o_end) x [0, n_inner) (the same operand addressing as the Triton
kernels: limb-major words, element at X + limb·ls + outer·os + inner·is).
The host splits rows across threads (ctypes drops the GIL during the call).

Lowering: the loops are `scf.for` over `llvm.load`/`llvm.store`; the vector
limb function is inlined into its loop, the scalar one stays a call (see
`_element`); then scf -> cf, arith/math/func/cf -> llvm,
and LLVM -O3 through the bindings' ExecutionEngine, which writes an object
file that the system linker turns into a shared object (kept in the kernel
cache, so a warm cache needs neither MLIR nor a compiler). 64-bit limb
products (`arith.mului_extended` on i64) become one x86 `mulx`/`mul`.

    "func.func"() <{sym_name = "kernel_0"}> ...      llvm.func @kernel_0_run(%arg0: !llvm.ptr, %arg1: i64, ...) {
                                               ->      ... llvm.load, llvm.intr.umul.with.overflow ..., llvm.store
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

from ..ir import dialects
from ..ir.builder import ROUND_DOWN

LOWERING = ("builtin.module(inline, canonicalize, cse, convert-scf-to-cf, convert-math-to-llvm, "
            "convert-arith-to-llvm, convert-func-to-llvm, convert-cf-to-llvm, reconcile-unrealized-casts)")


def _attrs(func):
    op = func.operation
    get = lambda k: int(str(op.attributes[k]).split(":")[0])  # noqa: E731
    return (str(op.attributes["sym_name"]).strip('"'), get("zktensor.limbs"), get("zktensor.inputs"),
            get("zktensor.outputs"), get("zktensor.lanes"))


def _element(lines, indent, callee, L, n_in, n_out, lanes, tag):
    """Load every operand's words at %at_<x>, call the limb function, store the results."""
    pad = " " * indent
    vt = "i32" if lanes == 1 else f"vector<{lanes}xi32>"
    align = "" if lanes == 1 else " {alignment = 4 : i64}"
    args = []
    for k in range(n_in):
        x = f"i{k}"
        for j in range(L):
            lines.append(f"{pad}%ix{tag}_{x}_{j} = arith.addi %at{tag}_{x}, %lo_{x}_{j} : i64")
            lines.append(f"{pad}%p{tag}_{x}_{j} = llvm.getelementptr %{x}[%ix{tag}_{x}_{j}] "
                         f": (!llvm.ptr, i64) -> !llvm.ptr, i32")
            lines.append(f"{pad}%w{tag}_{x}_{j} = llvm.load %p{tag}_{x}_{j}{align} : !llvm.ptr -> {vt}")
            args.append(f"%w{tag}_{x}_{j}")
    n_res = n_out * L
    # the scalar body stays a call: inlined into its element loop, LLVM's loop vectorizer
    # analyses it for every vector width, which took > 40 min for an Fq2 point kernel
    # (VPlan's onlyFirstLaneUsed over the body's use chains); the vector body is inlined
    attr = " {no_inline}" if lanes == 1 else ""
    lines.append(f"{pad}%r{tag}:{n_res} = func.call @{callee}({', '.join(args)}){attr} : "
                 f"({', '.join([vt] * len(args))}) -> ({', '.join([vt] * n_res)})")
    for q in range(n_out):
        x = f"o{q}"
        for j in range(L):
            lines.append(f"{pad}%ix{tag}_{x}_{j} = arith.addi %at{tag}_{x}, %lo_{x}_{j} : i64")
            lines.append(f"{pad}%p{tag}_{x}_{j} = llvm.getelementptr %{x}[%ix{tag}_{x}_{j}] "
                         f": (!llvm.ptr, i64) -> !llvm.ptr, i32")
            lines.append(f"{pad}llvm.store %r{tag}#{q * L + j}, %p{tag}_{x}_{j}{align} : {vt}, !llvm.ptr")


def _driver(name, L, n_in, n_out, lanes) -> str:
    """`@<name>_run` (any strides, one element a step) or, for lanes > 1,
    `@<name>_vrun` (unit column strides: `lanes` elements a step, then a scalar tail)."""
    ops = [f"o{k}" for k in range(n_out)] + [f"i{k}" for k in range(n_in)]
    params = ", ".join(f"%{x}: !llvm.ptr, %ls_{x}: i64, %os_{x}: i64, %is_{x}: i64" for x in ops)
    entry = f"{name}_run" if lanes == 1 else f"{name}_vrun"
    lines = [f"  func.func @{entry}({params}, %o_begin: i64, %o_end: i64, %n_inner: i64) {{",
             "    %c0 = arith.constant 0 : index",
             "    %c1 = arith.constant 1 : index",
             f"    %cl = arith.constant {lanes} : index",
             "    %ob = arith.index_cast %o_begin : i64 to index",
             "    %oe = arith.index_cast %o_end : i64 to index",
             "    %ni = arith.index_cast %n_inner : i64 to index",
             "    %nr = arith.remui %ni, %cl : index",
             "    %nv = arith.subi %ni, %nr : index"]
    for x in ops:
        for j in range(L):
            lines.append(f"    %k_{x}_{j} = arith.constant {j} : i64")
            lines.append(f"    %lo_{x}_{j} = arith.muli %k_{x}_{j}, %ls_{x} : i64")
    lines += ["    scf.for %o = %ob to %oe step %c1 {",
              "      %o64 = arith.index_cast %o : index to i64"]
    for x in ops:
        lines.append(f"      %row_{x} = arith.muli %o64, %os_{x} : i64")
    loops = [("", "%c0", "%ni", "%c1", 1, name)] if lanes == 1 else \
        [("v", "%c0", "%nv", "%cl", lanes, f"{name}_v{lanes}"), ("", "%nv", "%ni", "%c1", 1, name)]
    for tag, lo, hi, step, width, callee in loops:
        lines.append(f"      scf.for %i{tag} = {lo} to {hi} step {step} {{")
        lines.append(f"        %i64{tag} = arith.index_cast %i{tag} : index to i64")
        for x in ops:
            lines.append(f"        %col{tag}_{x} = arith.muli %i64{tag}, %is_{x} : i64")
            lines.append(f"        %at{tag}_{x} = arith.addi %row_{x}, %col{tag}_{x} : i64")
        _element(lines, 8, callee, L, n_in, n_out, width, tag)
        lines.append("      }")
    lines += ["    }", "    return", "  }"]
    return "\n".join(lines)


def wrap(module) -> str:
    """The limb module plus element-loop drivers (still `scf`/`arith`)."""
    body = str(module).strip()
    assert body.startswith("module {") and body.endswith("}")
    drivers = []
    for f in module.body.operations:
        if "zktensor.kind" not in f.operation.attributes:
            continue                          # an outlined helper (fmul), not a kernel
        name, L, n_in, n_out, lanes = _attrs(f)
        if lanes == 1:
            drivers.append(_driver(name, L, n_in, n_out, 1))
        else:
            drivers.append(_driver(name[: name.rindex("_v")], L, n_in, n_out, lanes))
    # kernel bodies become private so that inlining leaves only the drivers
    inner = body[len("module {"):-1].replace("func.func @kernel_", "func.func private @kernel_")
    return "module {\n" + inner + "\n" + "\n".join(drivers) + "\n}"


def refuse_rounded(text: str) -> None:
    """The CPU lowerings turn `math.fma` into LLVM's fma, which rounds to nearest: an fma
    marked ROUND_DOWN (a GPU target's split) would lose its mark and its meaning."""
    if ROUND_DOWN in text:
        raise ValueError(f"limbs-to-cpu: an fma marked {ROUND_DOWN} is for a GPU target; "
                         "lower for the CPU without round_down")


def lower(text: str, ctx):
    """Lower a wrapped module to the LLVM dialect (in place); returns the module."""
    refuse_rounded(text)
    ir, passmanager, _, _ = dialects.mlir()
    module = dialects.parse(text, ctx)
    with ctx:
        passmanager.PassManager.parse(LOWERING).run(module.operation)
    return module


def emit_shared_object(module, ctx, path: str) -> str:
    """JIT-compile at -O3 and link into `path` (.so); falls back to leaving only the .o."""
    _, _, execution_engine, _ = dialects.mlir()
    with ctx:
        engine = execution_engine.ExecutionEngine(module, opt_level=3)
        with tempfile.TemporaryDirectory() as tmp:
            obj = os.path.join(tmp, "kernel.o")
            engine.dump_to_object_file(obj)
            cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
            if cc is None:
                raise RuntimeError("limbs-to-cpu: no C compiler/linker (cc) found to link the kernel object")
            tmp_so = path + f".tmp{os.getpid()}"
            subprocess.run([cc, "-shared", "-o", tmp_so, obj],
                           check=True, capture_output=True)
            os.replace(tmp_so, path)
    return path
