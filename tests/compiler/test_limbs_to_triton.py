"""limbs-to-triton: limb-level IR -> Triton source (run here under Triton's interpreter)."""
from compiler_support import P, XS, YS, limbs, run
from zktensor.passes import limbs_to_triton


def test_limbs_to_triton_source():
    module, _ = limbs(lambda a, b: a * b, 2, "int32")
    src = limbs_to_triton.run(module)
    assert "def kernel_0_fn(" in src and "def kernel_0(" in src
    assert "tl.umulhi" in src and src.count("@triton.jit") == 2
    module, _ = limbs(lambda a, b: a * b, 2, "fp64")
    assert "tl.fma" in limbs_to_triton.run(module)


def test_triton_source_runs():
    (got,) = run(lambda a, b: a * b - b, [XS, YS], strategy="int32", target="triton")
    assert got == [(x * y - y) % P for x, y in zip(XS, YS)]
