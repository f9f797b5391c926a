"""Every generated field kernel compiles ahead of time for sm_90a and sm_80 without spills.

No GPU is needed: the triton wheel carries ptxas and cuobjdump. A kernel that
spills to local memory fails here, before it is ever slow on a GPU.
"""
import pytest

import zktensor as zt
from zktensor.ir.program import trace
from zktensor.kernels.aot import compile_program_kernels
from zktensor.kernels.elementwise import get_program

from tests.field.test_field_ops import everything

PROGRAMS = {
    "everything": (2, everything),           # +, -, ·, neg, square, x^5: every op the tests run
    "mul": (2, lambda a, b: a * b),
    "to_mont": (1, lambda a: a._op("to_mont")),
    "from_mont": (1, lambda a: a._op("from_mont")),
    "pow_loop": (1, lambda a: a ** (2 ** 9 + 3)),
}

SMALL = ("bn254.fr", "bn254.fq", "bls12_381.fr", "bls12_381.fq")
# The 753-bit fields: the multiplication kernel alone, int32 only. MNT4-753 with
# fp64 (15 limbs, 31 i64 column sums live at once) spills on sm_90a and takes
# ptxas minutes; it is a known gap, not something this suite pretends to pass.
# sm_90a gets every kernel the tests generate; sm_80 the fused one per field and strategy.
CASES = [(f, p, s, "sm_90a") for f in SMALL for p in PROGRAMS if p != "mul" for s in ("int32", "fp64")] + \
        [(f, "everything", s, "sm_80") for f in SMALL for s in ("int32", "fp64")] + \
        [(f, "mul", "int32", a) for f in ("mnt4753.fr", "mnt4753.fq") for a in ("sm_90a", "sm_80")]


@pytest.mark.parametrize("name,program,strategy,arch", CASES)
def test_no_spills(name, program, strategy, arch):
    n, fn = PROGRAMS[program]
    F = zt.field(name)
    compiled = get_program(trace(fn, F.params, n), strategy, "triton")
    for kernel, report in compile_program_kernels(compiled, arch).items():
        assert not report["spills"], f"{name} {program} {strategy} {arch} {kernel}: spills ({report})"
        assert report["registers"] <= 255
        mix = report["sass"]
        if strategy == "fp64":
            assert mix.get("DFMA", 0) > 0, "fp64 strategy must multiply on the FP64 pipe"
        else:
            assert mix.get("IMAD", 0) > 0
