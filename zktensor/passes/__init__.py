"""The compiler pipeline: a traced field program to Triton source or a CPU shared object.

    ec-to-field      `ec` (EcProgram, points)   -> field Program over Fq  (ec programs only)
    trace            Program (Python)           -> `field` dialect (@main)
    canonicalize     `field`                    -> `field` (rewrite rules, CSE, DCE)
    fuse-elementwise `field`                    -> `field` (@kernel_N + @main calling them)
    field-to-limbs   `field`                    -> `arith`/`math`/`scf` over i32 words
    limbs-to-triton  limbs                      -> Triton source        (target "triton")
    limbs-to-cpu     limbs                      -> LLVM dialect -> .so   (target "cpu")

`ZKTENSOR_PRINT_IR=1` prints the IR after every pass and the generated source
at the end; every stage is parsed and verified by MLIR before the next runs.
"""
from __future__ import annotations

import os
import sys

from ..ir import dialects
from ..ir.program import Program
from ..runtime.target import check as target_check
from . import canonicalize, field_io, field_to_limbs, fuse_elementwise, limbs_to_cpu, limbs_to_triton
from .limb_arith import STRATEGIES

TARGETS = ("cpu", "triton")
OUTLINE_MUL_WORDS = int(os.environ.get("ZKTENSOR_OUTLINE_MUL_WORDS", 12))  # CPU: fields this wide call one multiplication function


def _show(stage: str, text: str) -> None:
    if os.environ.get("ZKTENSOR_PRINT_IR"):
        print(f"// ----- after {stage} -----\n{text}\n", file=sys.stderr)


def compile_program(prog: Program, strategy: str, target: str, out_dir: str,
                    lanes: int = 1, ifma: bool = False, max_products: int | None = None,
                    max_inputs: int | None = None) -> dict:
    """Run every pass; write the artifact into out_dir; return the launch plan.
    CPU options: `lanes` > 1 adds vector twins of every kernel, `ifma` uses AVX-512 IFMA.
    `max_products` / `max_inputs`: fuse-elementwise starts a new kernel after that many
    products / before reading more values than that (a chain of small kernels where one
    would not fit a GPU's registers)."""
    prog = lower_ec(prog)  # an `ec` program enters through ec-to-field; a field Program as it is
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {STRATEGIES}")
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose from {TARGETS}")
    target_check(strategy, target)
    ctx = dialects.context()

    def field_pass(name, fn, module):
        text = field_io.write(fn(field_io.read(module)))
        _show(name, text)
        return dialects.parse(text, ctx)

    module = dialects.parse(field_io.write([field_io.FieldFunc.from_program(prog)]), ctx)
    _show("trace", str(module))
    module = field_pass("canonicalize", canonicalize.run, module)
    module = field_pass("fuse-elementwise", lambda fs: fuse_elementwise.run(fs, max_products, max_inputs), module)
    plan = _launch_plan(field_io.read(module))
    if target == "triton":  # a GPU's fma rounds down on request: the fp64 split's three-op form
        vector = {"round_down": True} if strategy == "fp64" else {}
    else:
        vector = {"lanes": lanes, "ifma": ifma, "outline_mul": prog.field.limbs32 >= OUTLINE_MUL_WORDS}
    limbs = dialects.parse(field_to_limbs.run(field_io.read(module), strategy, **vector), ctx)
    _show(f"field-to-limbs{{strategy={strategy}{''.join(f', {k}={v}' for k, v in vector.items())}}}",
          str(limbs))
    if target == "triton":
        source = limbs_to_triton.run(limbs)
        _show("limbs-to-triton", source)
        with open(os.path.join(out_dir, "kernels.py"), "w") as f:
            f.write(source)
    else:
        wrapped = limbs_to_cpu.wrap(limbs)
        _show("limbs-to-cpu (element loops)", wrapped)
        llvm = limbs_to_cpu.lower(wrapped, ctx)
        _show("limbs-to-cpu (llvm)", str(llvm))
        limbs_to_cpu.emit_shared_object(llvm, ctx, os.path.join(out_dir, "kernels.so"))
    return plan


def _launch_plan(funcs) -> dict:
    """Which kernels run, in order, on which program values."""
    (main,) = [f for f in funcs if f.name == "main"]
    kernels = {f.name: f for f in funcs if f.name != "main"}
    calls = []
    for i, n in enumerate(main.nodes):
        callee, n_res = n.attr
        calls.append({"kernel": callee, "inputs": [_vid(a) for a in n.args],
                      "outputs": [[main.n_args + i, r] for r in range(n_res)]})
    return {"n_inputs": main.n_args, "calls": calls, "outputs": [_vid(o) for o in main.outputs],
            "limbs": None, "kernels": sorted(kernels)}


def _vid(v):
    return [v, None] if isinstance(v, int) else [v[0], v[1]]


def lower_ec(prog):
    """ec-to-field: an `EcProgram` (zktensor.ir.ec) becomes the field Program that the
    passes above take; anything else is returned as it is."""
    from ..ir.ec import EcProgram
    if not isinstance(prog, EcProgram):
        return prog
    from . import ec_to_field
    module = dialects.parse(prog.to_mlir(), dialects.context())
    _show("trace (ec)", str(module))
    return ec_to_field.run(module)
