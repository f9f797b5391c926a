"""Host side of compiled `ec` programs: trace once, compile through the pipeline, run.

An ec program (`zktensor.ir.ec`) is traced once per (group, key) and compiled
by the same pipeline as field programs (`zktensor.passes.compile_program`
starts it with ec-to-field), cached on disk by the program's text. Its
kernels take and return base-field limb tensors, one per Fq *component*: a
value of kind `xyzz` over G2 is 8 tensors (X.c0, X.c1, Y.c0, ..., ZZZ.c1), a
`coord` over G2 is 2, an `fq` value 1 (see `n_components`). Each tensor is
(L, *batch) int32 in Montgomery form, any strides (views into point-major or
limb-major storage both work), with `out=` views written in place. On the Triton target the program's device
function runs inside the tile kernel of `msm_triton`.
"""
from __future__ import annotations

import torch

from ..runtime.target import choose
from ..ir import ec as ec_ir
from .elementwise import get_program
from .field_programs import traced

def program(G, key, kinds, fn) -> ec_ir.EcProgram:
    """The traced program for (group, key); `fn` is only called on the first request."""
    return traced(("ec", G.name, key, tuple(kinds)), lambda: ec_ir.trace(fn, G, kinds))


def compiled(G, key, kinds, fn, device_type: str = "cpu", strategy=None, target=None):
    """The CompiledProgram (`get_program` memoises it by the traced program object, with the
    CPU options in force, so a launch does not re-print the program's text)."""
    strategy, target = choose(device_type, strategy, target)
    cuts = None
    if target == "triton":
        cuts = G.triton_cuts
    return get_program(program(G, key, kinds, fn), strategy, target, cuts)


def run(G, key, kinds, fn, inputs, out=None, strategy=None, target=None) -> list[torch.Tensor]:
    """Run the program over flat component tensors; returns the flat output components."""
    c = compiled(G, key, kinds, fn, inputs[0].device.type, strategy, target)
    if len(inputs) != c.meta["n_inputs"]:
        raise TypeError(f"ec program {key!r} takes {c.meta['n_inputs']} component tensors, got {len(inputs)}")
    if c.target == "triton":
        from . import msm_triton        # one memory op per component (see msm_triton)
        return msm_triton.run(c, inputs, out)
    return c(*inputs, out=out)


def run_many(G, key, kinds, fn, jobs) -> None:
    """`run` over several batches, jobs = [(inputs, outs, m)], with every output given (views
    written in place), in one launch where the target allows (`CompiledProgram.run_many`;
    on the CPU an operand may be its address, see there)."""
    if not jobs:
        return
    c = compiled(G, key, kinds, fn, _device_of(jobs))
    if c.target == "triton":
        from . import msm_triton
        for inputs, outs, _ in jobs:
            msm_triton.run(c, inputs, outs)
        return
    c.run_many(jobs)


def _device_of(jobs) -> str:
    """The device type of run_many jobs (addresses are CPU memory)."""
    t = jobs[0][0][0]
    return t.device.type if isinstance(t, torch.Tensor) else "cpu"


def output_sizes(G, key, kinds, fn) -> list[int]:
    prog = program(G, key, kinds, fn)
    return [ec_ir.n_components(G, k) for k in prog.output_kinds()]
