"""Ahead-of-time compilation of generated Triton kernels for NVIDIA targets, no GPU needed.

The triton wheel carries ptxas and cuobjdump, so a kernel can be compiled for
sm_90a / sm_80 anywhere and inspected: registers per thread, local memory
(register spills) and the SASS instruction mix. The test suite fails on
spills; `bench/sass_report.py` prints the report.
"""
from __future__ import annotations

import collections
import os
import re
import subprocess
import tempfile

from .elementwise import load_triton_module, triton_mode

ARCHS = {"sm_90a": 90, "sm_80": 80}


def _tool(name: str) -> str:
    import triton
    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def elementwise_signature(fn) -> tuple[dict, dict]:
    sig, const = {}, {}
    for name in fn.arg_names:
        if name == "BLOCK":
            sig[name], const[name] = "constexpr", 128
        elif re.fullmatch(r"[oi]\d+", name):
            sig[name] = "*i32"
        else:
            sig[name] = "i32"
    return sig, const


def compile_kernel(fn, arch: str = "sm_90a", signature=None, constexprs=None, num_warps: int = 4) -> dict:
    """Compile one @triton.jit kernel; returns registers, spills and SASS opcode counts."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if signature is None:
        signature, constexprs = elementwise_signature(fn)
    with triton_mode(False):
        compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs or {}),
                                  target=GPUTarget("cuda", ARCHS[arch], 32),
                                  options={"num_warps": num_warps})
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(compiled.asm["cubin"])
        res = subprocess.run([_tool("cuobjdump"), "-res-usage", cubin], capture_output=True, text=True,
                             check=True).stdout
        sass = subprocess.run([_tool("cuobjdump"), "-sass", cubin], capture_output=True, text=True,
                              check=True).stdout
    regs = int(re.search(r"REG:(\d+)", res).group(1))
    local = int(re.search(r"LOCAL:(\d+)", res).group(1))
    ops = collections.Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?", line)
        if m:
            ops[m.group(1)] += 1
    return {"arch": arch, "registers": regs, "local_bytes": local, "sass": dict(ops),
            "spills": "STL" in ops or "LDL" in ops or local > 0}


def compile_program_kernels(compiled_program, arch: str = "sm_90a") -> dict:
    """AOT-compile every elementwise kernel of a CompiledProgram (Triton target)."""
    mod = load_triton_module(str(compiled_program.entry / "kernels.py"), interpret=False)
    return {name: compile_kernel(getattr(mod, name), arch) for name in compiled_program.meta["kernels"]}
