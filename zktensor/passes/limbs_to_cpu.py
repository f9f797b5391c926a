"""limbs-to-cpu: wrap limb kernels in element loops and lower them to machine code.

Input: the limb module from field-to-limbs. Output: a shared object holding,
for each `@kernel_N`, a C-callable

    void kernel_N_run(o0, ls_o0, os_o0, is_o0, ..., i0, ls_i0, ..., o_begin, o_end, n_inner)

that runs the limb function for every element of the 2-D strided batch rows
[o_begin, o_end) x [0, n_inner) (the same operand addressing as the Triton
kernels: limb-major words, element at X + limb·ls + outer·os + inner·is).
The host splits rows across threads (ctypes drops the GIL during the call).

Lowering: the loops are `scf.for` over `llvm.load`/`llvm.store`; the limb
function is inlined into them; then scf -> cf, arith/math/func/cf -> llvm,
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

LOWERING = ("builtin.module(inline, canonicalize, cse, convert-scf-to-cf, convert-math-to-llvm, "
            "convert-arith-to-llvm, convert-func-to-llvm, convert-cf-to-llvm, reconcile-unrealized-casts)")


def _driver(func) -> str:
    op = func.operation
    name = str(op.attributes["sym_name"]).strip('"')
    L = int(str(op.attributes["zktensor.limbs"]).split(":")[0])
    n_in = int(str(op.attributes["zktensor.inputs"]).split(":")[0])
    n_out = int(str(op.attributes["zktensor.outputs"]).split(":")[0])
    ops = [f"o{k}" for k in range(n_out)] + [f"i{k}" for k in range(n_in)]
    params = ", ".join(f"%{x}: !llvm.ptr, %ls_{x}: i64, %os_{x}: i64, %is_{x}: i64" for x in ops)
    lines = [f"  func.func @{name}_run({params}, %o_begin: i64, %o_end: i64, %n_inner: i64) {{",
             "    %c0 = arith.constant 0 : index",
             "    %c1 = arith.constant 1 : index",
             "    %ob = arith.index_cast %o_begin : i64 to index",
             "    %oe = arith.index_cast %o_end : i64 to index",
             "    %ni = arith.index_cast %n_inner : i64 to index"]
    for x in ops:
        for j in range(L):
            lines.append(f"    %k_{x}_{j} = arith.constant {j} : i64")
            lines.append(f"    %lo_{x}_{j} = arith.muli %k_{x}_{j}, %ls_{x} : i64")
    lines += ["    scf.for %o = %ob to %oe step %c1 {",
              "      %o64 = arith.index_cast %o : index to i64"]
    for x in ops:
        lines.append(f"      %row_{x} = arith.muli %o64, %os_{x} : i64")
    lines += ["      scf.for %i = %c0 to %ni step %c1 {",
              "        %i64 = arith.index_cast %i : index to i64"]
    args = []
    for x in ops:
        lines.append(f"        %col_{x} = arith.muli %i64, %is_{x} : i64")
        lines.append(f"        %at_{x} = arith.addi %row_{x}, %col_{x} : i64")
    for k in range(n_in):
        x = f"i{k}"
        for j in range(L):
            lines.append(f"        %ix_{x}_{j} = arith.addi %at_{x}, %lo_{x}_{j} : i64")
            lines.append(f"        %p_{x}_{j} = llvm.getelementptr %{x}[%ix_{x}_{j}] : (!llvm.ptr, i64) -> !llvm.ptr, i32")
            lines.append(f"        %w_{x}_{j} = llvm.load %p_{x}_{j} : !llvm.ptr -> i32")
            args.append(f"%w_{x}_{j}")
    n_res = n_out * L
    types_in = ", ".join(["i32"] * len(args))
    types_out = ", ".join(["i32"] * n_res)
    lines.append(f"        %r:{n_res} = func.call @{name}({', '.join(args)}) : ({types_in}) -> ({types_out})")
    for q in range(n_out):
        x = f"o{q}"
        for j in range(L):
            lines.append(f"        %ix_{x}_{j} = arith.addi %at_{x}, %lo_{x}_{j} : i64")
            lines.append(f"        %p_{x}_{j} = llvm.getelementptr %{x}[%ix_{x}_{j}] : (!llvm.ptr, i64) -> !llvm.ptr, i32")
            lines.append(f"        llvm.store %r#{q * L + j}, %p_{x}_{j} : i32, !llvm.ptr")
    lines += ["      }", "    }", "    return", "  }"]
    return "\n".join(lines)


def wrap(module) -> str:
    """The limb module plus an element-loop driver per kernel (still `scf`/`arith`)."""
    body = str(module).strip()
    assert body.startswith("module {") and body.endswith("}")
    drivers = "\n".join(_driver(f) for f in module.body.operations)
    # kernel bodies become private so that inlining leaves only the drivers
    inner = body[len("module {"):-1].replace("func.func @kernel_", "func.func private @kernel_")
    return "module {\n" + inner + "\n" + drivers + "\n}"


def lower(text: str, ctx):
    """Lower a wrapped module to the LLVM dialect (in place); returns the module."""
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
