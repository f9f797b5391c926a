"""What the pass tests share: a traced program at any stage of the pipeline, printed and
verified by MLIR, and a program compiled by the whole pipeline and run, against Python ints.

Runs go to a temporary directory (not the kernel cache), so each compiles what its pass
produced now.
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import zktensor as zt
from zktensor.algebra import field
from zktensor.ir import dialects
from zktensor.ir.program import trace
from zktensor.kernels.elementwise import CompiledProgram
from zktensor.passes import canonicalize, compile_program, field_io, field_to_limbs, fuse_elementwise

F = field("bn254.fr")
P = F.p
XS = [3, P - 1, 12345678901234567890, 0]        # inputs of the runs: small, -1, wide, zero
YS = [5, 7, P - 2, 1]


def parsed(text):
    ctx = dialects.context()
    return dialects.parse(text, ctx), ctx


def field_stage(fn, n, passes=()):
    """The `field` module of fn after the given field-to-field passes."""
    module, _ = parsed(field_io.write([field_io.FieldFunc.from_program(trace(fn, F, n))]))
    for p in passes:
        module, _ = parsed(field_io.write(p.run(field_io.read(module))))
    return module


def limbs(fn, n, strategy, **kw):
    """The limb-level module of fn (after canonicalize, fuse-elementwise, field-to-limbs)."""
    module = field_stage(fn, n, [canonicalize, fuse_elementwise])
    return parsed(field_to_limbs.run(field_io.read(module), strategy, **kw))


def run(fn, inputs, strategy="int64", target="cpu", **options) -> list:
    """fn compiled by the whole pipeline for (strategy, target) and run on CPU tensors of
    `inputs` (lists of ints): the outputs as lists of ints."""
    return run_program(trace(fn, F, len(inputs)), inputs, strategy, target, **options)


def run_program(prog, inputs, strategy="int64", target="cpu", **options) -> list:
    """A traced program (a field `Program`, or an `ec` program: one tensor per base-field
    component) compiled by the whole pipeline and run on CPU tensors of `inputs` (lists of
    ints of its field): the outputs as lists of ints."""
    record = prog.field
    space = zt.field(record.name)
    with tempfile.TemporaryDirectory() as d:
        plan = compile_program(prog, strategy, target, d, **options)
        (Path(d) / "meta.json").write_text(json.dumps(plan))
        compiled = CompiledProgram(Path(d), target, record.limbs32)
        outs = compiled(*(space.tensor(xs).data for xs in inputs))
        return [zt.FieldTensor(space, o).to_ints() for o in outs]
