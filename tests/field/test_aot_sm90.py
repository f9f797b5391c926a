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
    "everything": (2, everything),
    "mul": (2, lambda a, b: a * b),
    "to_mont": (1, lambda a: a._op("to_mont")),
    "from_mont": (1, lambda a: a._op("from_mont")),
    "pow_loop": (1, lambda a: a ** (2 ** 40 + 12345)),
}

# the 753-bit field: the multiplication kernel alone (ptxas time grows fast with size)
CASES = [(f, p) for f in ("bn254.fr", "bn254.fq", "bls12_381.fr", "bls12_381.fq") for p in PROGRAMS] + \
        [("mnt4753.fr", "mul"), ("mnt4753.fq", "mul")]


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("strategy", ["int32", "fp64"])
@pytest.mark.parametrize("name,program", CASES)
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
