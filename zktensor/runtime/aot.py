"""Ahead-of-time compilation of generated Triton kernels for NVIDIA targets, no GPU needed.

The triton wheel carries ptxas and cuobjdump, so a kernel can be compiled for
sm_90a / sm_80 anywhere and inspected: registers per thread, local memory
(register spills) and the SASS instruction mix. The test suite fails on
spills where a kernel is known to have none (ARCHITECTURE.md lists the gaps);
`bench/sass_report.py` prints the report.

Every compilation runs in a fresh Python process that imports only triton (this
file, run as a script). Two reasons: the Triton interpreter (TRITON_INTERPRET,
which the CPU tests use) patches ``triton.language`` for the rest of a process
when an interpreted kernel calls a device function (Triton 3.9), after which the
real compiler fails on the patched tensor methods; and a separate process can be
given a time limit.

Limb kernels are compiled without Triton's coalescing pass, exactly as they are
launched (runtime/triton_passes.py: the pass costs time quadratic in a kernel's
size and changes nothing in their SASS).
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile

ARCHS = {"sm_90a": 90, "sm_80": 80}


def _tool(name: str) -> str:
    import triton
    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)


def available() -> bool:
    """Whether this triton wheel can compile for NVIDIA without a GPU (ptxas and cuobjdump)."""
    try:
        return all(os.path.exists(_tool(t)) for t in ("ptxas", "cuobjdump"))
    except ImportError:
        return False


def elementwise_signature(arg_names, block: int = 128) -> tuple[dict, dict]:
    """Signature of a generated elementwise/point kernel: o<k>/i<k> are int32 limb
    pointers, BLOCK is the tile, everything else an int32 stride or count."""
    sig, const = {}, {}
    for name in arg_names:
        if name == "BLOCK":
            sig[name], const[name] = "constexpr", block
        elif re.fullmatch(r"[oi]\d+", name):
            sig[name] = "*i32"
        else:
            sig[name] = "i32"
    return sig, const


def compile_kernel(fn, arch: str = "sm_90a", signature=None, constexprs=None, num_warps: int = 4,
                   timeout: float | None = None, coalesce: bool = False, maxnreg: int | None = None) -> dict:
    """Compile one @triton.jit kernel (defined in a file) for `arch` in a fresh process.

    Returns {"arch", "registers", "local_bytes", "spills", "sass": {opcode: count}, "loop"
    (`loop_mix`), "seconds"}.
    `signature`/`constexprs` default to the generated elementwise kernels' convention.
    `coalesce`: run Triton's coalescing pass, as the NTT kernel's launches do; limb
    kernels are launched without it (runtime/triton_passes.py), and compiled so here.
    `maxnreg`: ptxas's register cap, as a launch's `maxnreg` option sets it."""
    py = getattr(fn, "fn", fn)                       # JITFunction -> the Python function
    request = {"path": py.__code__.co_filename, "name": py.__name__, "arch": arch,
               "signature": signature, "constexprs": constexprs, "num_warps": num_warps,
               "coalesce": coalesce, "maxnreg": maxnreg}
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    try:
        res = subprocess.run([sys.executable, os.path.abspath(__file__)], input=json.dumps(request),
                             capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"AOT compile of {request['name']} for {arch} took over {timeout} s") from None
    if res.returncode:
        raise RuntimeError(f"AOT compile of {request['name']} ({request['path']}) for {arch} failed:\n"
                           f"{res.stderr[-4000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def compile_program_kernels(compiled_program, arch: str = "sm_90a", timeout: float | None = None) -> dict:
    """AOT-compile every elementwise kernel of a CompiledProgram (Triton target)."""
    from .triton_modules import load_triton_module
    mod = load_triton_module(str(compiled_program.entry / "kernels.py"), interpret=False)
    return {name: compile_kernel(getattr(mod, name), arch, timeout=timeout)
            for name in compiled_program.meta["kernels"]}


# one SASS instruction as cuobjdump prints it: address, predicate, opcode (less its
# modifiers), operands
_INSTR = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?\s*([^;]*);")


def sass_mix(sass: str) -> dict:
    return dict(collections.Counter(m.group(3) for m in map(_INSTR.match, sass.splitlines()) if m))


RARE_BRANCH_WINDOW = 400        # instructions from a block-wide vote to the branch it decides


def loop_mix(sass: str) -> dict | None:
    """The instruction mix of a kernel's main loop as most of its trips run it, from the
    SASS text: the instructions between the backward branch that spans the most and its
    target, less the code that a block-wide `if` skips (`if tl.reduce(flag, 0, _any) > 0`
    in the device MSM: a REDUX, then, within RARE_BRANCH_WINDOW instructions, a predicated
    forward BRA, taken where no lane needs the code: P = Q, an identity operand). A static
    reading of the SASS, not a count of what a GPU ran. None without a loop. Returns
    {"loop": instructions in the loop, "rare": those skipped, "hot": {opcode: count}}."""
    ins = [(int(m.group(1), 16), m.group(2), m.group(3), m.group(4)) for m in map(_INSTR.match, sass.splitlines()) if m]
    at = {a: i for i, (a, *_) in enumerate(ins)}

    def target(i):
        t = re.match(r"\s*(0x[0-9a-f]+|[0-9a-f]+)", ins[i][3])
        return int(t.group(1), 16) if t else None
    back = [(i, at[t]) for i in range(len(ins)) if ins[i][2] == "BRA" and (t := target(i)) is not None
            and t < ins[i][0] and t in at]
    if not back:
        return None
    end, start = max(back, key=lambda b: b[0] - b[1])
    rare = set()
    for i in range(start, end):
        if ins[i][2] != "REDUX":
            continue
        for k in range(i + 1, min(i + RARE_BRANCH_WINDOW, end)):
            if ins[k][2] == "BRA" and ins[k][1]:
                t = target(k)
                if t is not None and t > ins[k][0] and t in at:
                    rare.update(range(k + 1, at[t]))
                break
    hot = collections.Counter(ins[i][2] for i in range(start, end + 1) if i not in rare)
    return {"loop": end - start + 1, "rare": len(rare & set(range(start, end + 1))), "hot": dict(hot)}


def _worker() -> None:
    """Child process: one request as JSON on stdin, the report as JSON on stdout."""
    import importlib.util
    import time

    req = json.loads(sys.stdin.read())
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location(f"zktensor_aot_{abs(hash(req['path']))}", req["path"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, req["name"])
    sig, const = req["signature"], req["constexprs"]
    if sig is None:
        sig, const = elementwise_signature(fn.arg_names)
    # this directory's triton_passes by path: importing the package would import torch
    spec = importlib.util.spec_from_file_location(
        "zktensor_triton_passes", os.path.join(os.path.dirname(os.path.abspath(__file__)), "triton_passes.py"))
    passes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(passes)
    t0 = time.perf_counter()
    with contextlib.nullcontext() if req["coalesce"] else passes.skip_coalesce():
        compiled = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=const or {}),
                                  target=GPUTarget("cuda", ARCHS[req["arch"]], 32),
                                  options={"num_warps": req["num_warps"],
                                           **({"maxnreg": req["maxnreg"]} if req.get("maxnreg") else {})})
    seconds = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(compiled.asm["cubin"])
        res = subprocess.run([_tool("cuobjdump"), "-res-usage", cubin], capture_output=True, text=True,
                             check=True).stdout
        sass = subprocess.run([_tool("cuobjdump"), "-sass", cubin], capture_output=True, text=True,
                              check=True).stdout
    usage = resource_usage(res)
    mine = usage.get(req["name"]) or next(iter(usage.values()))
    ops = sass_mix(sass)
    print(json.dumps({"arch": req["arch"], "registers": mine["REG"], "local_bytes": mine["LOCAL"],
                      "stack_bytes": mine.get("STACK", 0), "functions": usage, "sass": ops, "loop": loop_mix(sass),
                      "spills": "STL" in ops or "LDL" in ops or mine["LOCAL"] > 0, "seconds": round(seconds, 2)}))


def resource_usage(text: str) -> dict:
    """{function: {"REG": n, "STACK": n, "LOCAL": n, ...}} from `cuobjdump -res-usage`: the
    kernel's own line, not the first one (a cubin may list helper functions first)."""
    out, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*Function ([^:\s]+):", line)
        if m:
            name = m.group(1)
        elif name is not None and "REG:" in line:
            out[name] = {k: int(v) for k, v in re.findall(r"([A-Z]+):(\d+)", line)}     # not CONSTANT[i]
            name = None
    if not out:
        raise RuntimeError(f"cuobjdump -res-usage gave no function's registers:\n{text[:2000]}")
    return out


if __name__ == "__main__":
    sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
    _worker()
