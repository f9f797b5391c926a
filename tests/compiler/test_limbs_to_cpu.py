"""limbs-to-cpu: limb-level IR -> driver loops -> the LLVM dialect -> a shared object."""
import re

from compiler_support import P, XS, YS, limbs, run
from zktensor.passes import limbs_to_cpu


def test_limbs_to_cpu_drivers_and_llvm():
    module, ctx = limbs(lambda a, b: a * b, 2, "fp64", lanes=8, ifma=False)
    wrapped = limbs_to_cpu.wrap(module)
    assert "@kernel_0_run" in wrapped and "@kernel_0_vrun" in wrapped
    assert "!llvm.ptr -> vector<8xi32>" in wrapped
    llvm = str(limbs_to_cpu.lower(wrapped, ctx))
    assert "llvm.func @kernel_0_run" in llvm and "llvm.intr.fma" in llvm
    assert "scf." not in llvm and "arith." not in llvm
    # the scalar body stays a call in both element loops (run and vrun's tail): LLVM's loop
    # vectorizer took > 40 min over inlined Fq2 bodies; the vector body is inlined
    assert len(re.findall(r"func.call @kernel_0\(.*\) \{no_inline\}", wrapped)) == 2
    assert re.search(r"func.call @kernel_0_v8\([^)]*\) :", wrapped)
    assert len(re.findall(r"llvm.call @kernel_0\(", llvm)) == 2 and "@kernel_0_v8(" not in llvm


def test_vector_and_scalar_loops_run():
    """8 lanes: the vector loop takes whole vectors, the scalar tail the rest (19 = 2·8 + 3)."""
    xs, ys = (XS * 5)[:19], (YS * 5)[:19]
    (got,) = run(lambda a, b: a * b + a, [xs, ys], strategy="fp64", lanes=8, ifma=False)
    assert got == [(x * y + x) % P for x, y in zip(xs, ys)]
