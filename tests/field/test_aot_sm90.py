"""Generated field kernels compile ahead of time for sm_90a and sm_80 without spills.

No GPU is needed: the triton wheel carries ptxas and cuobjdump. A kernel that
spills to local memory fails here, before it is ever slow on a GPU.

Which kernels: the multiplication (the kernel every other is built from) for
every field and strategy on sm_90a, and on sm_80 for the smallest and largest
field of each curve family; the other kernel shapes the library generates
(conversions in and out of Montgomery form, additive chains, and the looped
exponentiation with loop-carried limbs) for BN254 Fr and each strategy.
Kernels compile as they are launched: without Triton's coalescing pass
(runtime/triton_passes.py), whose time is quadratic in a kernel's size; the
last test checks that skipping it leaves the SASS unchanged.

fp64 products take three FP64 instructions each (a DFMA.RM, a DADD, a DFMA): the split
rounds down on the GPU (limb_arith), which the DADD count checks.

The square of MNT4-753 too: computed as CIOS on (a, a) it took 255 registers
and spilled where a·b took 128 (the compiler shared the repeated products);
limb_arith's SOS square takes 96.
MNT4-753 with fp64 (15 limbs, 31 i64 column sums live at once) spills on
sm_90a: a known gap, stated in the README, not passed here.
"""
import pytest

import zktensor as zt
from zktensor.ir.program import trace
from zktensor.runtime import aot
from zktensor.kernels.elementwise import get_program

PROGRAMS = {
    "mul": (2, lambda a, b: a * b),
    "square": (1, lambda a: a * a),
    "add_sub": (3, lambda a, b, c: a + b - c - (-a)),
    "to_mont": (1, lambda a: a._op("to_mont")),
    "from_mont": (1, lambda a: a._op("from_mont")),
    "pow_loop": (1, lambda a: a ** (2 ** 9 + 3)),
}

SMALL = ("bn254.fr", "bn254.fq", "bls12_381.fr", "bls12_381.fq")
STRATEGIES = ("int32", "fp64")
CASES = [(f, "mul", s, "sm_90a") for f in SMALL for s in STRATEGIES] + \
        [(f, "mul", s, "sm_80") for f in ("bn254.fr", "bls12_381.fq") for s in STRATEGIES] + \
        [("bn254.fr", p, s, "sm_90a") for p in ("add_sub", "to_mont", "from_mont", "pow_loop")
         for s in STRATEGIES] + \
        [(f, p, "int32", "sm_90a") for f in ("mnt4753.fr", "mnt4753.fq") for p in ("mul", "square")]


@pytest.mark.skipif(not aot.available(), reason="triton wheel without ptxas/cuobjdump")
@pytest.mark.parametrize("name,program,strategy,arch", CASES)
def test_no_spills(name, program, strategy, arch):
    n, fn = PROGRAMS[program]
    F = zt.field(name)
    compiled = get_program(trace(fn, F.params, n), strategy, "triton")
    reports = aot.compile_program_kernels(compiled, arch, timeout=900)
    assert reports
    for kernel, report in reports.items():
        assert not report["spills"], f"{name} {program} {strategy} {arch} {kernel}: spills ({report})"
        assert 0 < report["registers"] <= 255
        mix = report["sass"]
        if program == "add_sub":
            assert mix.get("DFMA", 0) == 0, "no multiplication expected"
        elif strategy == "fp64":
            assert mix.get("DFMA", 0) > 0, "fp64 strategy must multiply on the FP64 pipe"
            if program in ("mul", "square"):   # (from_mont's products by 1 fold into DADDs)
                # a product is fma_rd, a subtraction and an fma (limb_arith's round_down):
                # one DADD to two DFMAs, where round-to-nearest takes two of each
                assert 2 * mix.get("DADD", 0) <= mix["DFMA"] + 8, f"{name} {program}: {mix}"
        else:
            assert mix.get("IMAD", 0) > 0


@pytest.mark.skipif(not aot.available(), reason="triton wheel without ptxas/cuobjdump")
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_skipping_coalesce_changes_no_instruction(strategy):
    """The premise of triton_passes.skip_coalesce, checked on this Triton: same SASS."""
    F = zt.field("bn254.fr")
    compiled = get_program(trace(lambda a, b: a * b * b, F.params, 2), strategy, "triton")
    from zktensor.runtime.triton_modules import load_triton_module
    fn = load_triton_module(str(compiled.entry / "kernels.py"), interpret=False).kernel_0
    without, with_ = (aot.compile_kernel(fn, "sm_90a", coalesce=c, timeout=900) for c in (False, True))
    assert without["sass"] == with_["sass"] and without["registers"] == with_["registers"]


def test_skip_coalesce_is_scoped():
    """Only compilations inside the block lose the pass; other Triton users keep it."""
    passes = pytest.importorskip("triton._C.libtriton").passes
    from zktensor.runtime.triton_passes import skip_coalesce
    with skip_coalesce():
        assert passes.ttgpuir.add_coalesce(object()) is None      # skipped: the argument is not used
    with pytest.raises(TypeError):
        passes.ttgpuir.add_coalesce(object())                    # the real pass, given a non-PassManager
