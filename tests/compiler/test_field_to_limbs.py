"""field-to-limbs: `field` -> `arith`/`math`/`scf` over machine words, per strategy."""
import re

import pytest

from compiler_support import F, P, XS, YS, field_stage, limbs, run
from zktensor.passes import canonicalize, field_io, field_to_limbs
from zktensor.passes.limb_arith import LAZY_OPS


@pytest.mark.parametrize("strategy,must", [
    ("int32", [r"arith.mului_extended .* : i32", r"arith.addui_extended .* : i32"]),
    ("int64", [r"arith.mului_extended .* : i64"]),
    ("fp64", [r"math.fma .* : f64", r"arith.bitcast .* : f64 to i64"]),
])
def test_field_to_limbs_strategies(strategy, must):
    module, _ = limbs(lambda a, b: a * b, 2, strategy)
    text = str(module)
    for pattern in must:
        assert re.search(pattern, text), pattern
    assert "field." not in text.replace("zktensor.field", "")
    assert "zktensor.limbs = 8" in text


def test_field_to_limbs_leaves_product_inputs_unreduced():
    """fp64: a value read only by products skips its conditional subtraction (one select
    per limb), a result or a value read by anything else keeps it; int32 reduces all."""
    n = F.limbs52
    lazy = field_to_limbs.lazy_values
    f = field_io.read(field_stage(lambda a, b, c: ((a - b) * c, a * b + c), 3, [canonicalize]))[0]
    assert [f.nodes[v - f.n_args].op for v in sorted(lazy(f, LAZY_OPS))] == ["sub"]
    selects = lambda fn, k, strategy="fp64": str(limbs(fn, k, strategy)[0]).count("arith.select")  # noqa: E731
    assert selects(lambda a, b, c: (a * b) * c, 3) == n                # a·b unreduced
    assert selects(lambda a, b, c: (a * b, (a * b) * c), 3) == 2 * n     # a·b is a result
    assert selects(lambda a, b, c: (a * b) * c + a * b, 3) == 3 * n      # read by an add
    assert selects(lambda a, b, c: (a * b) * c, 3, "int32") == 2 * F.limbs32


def test_field_to_limbs_pow_loop_and_vector_twins():
    module, _ = limbs(lambda a: a ** (2 ** 40 + 1), 1, "fp64", lanes=8, ifma=True, outline_mul=True)
    text = str(module)
    assert "scf.for" in text                                        # 2 chunks of 32 steps
    assert "vector<8xi32>" in text and "@kernel_0_v8" in text       # vector twin
    assert "llvm.x86.avx512.vpmadd52l.uq.512" in text               # IFMA products
    assert "call @fmul_fp64_l8" in text and "no_inline" in text     # outlined multiplication


@pytest.mark.parametrize("strategy", ["int32", "int64", "fp64"])
def test_every_strategy_runs_exact(strategy):
    """The unreduced fp64 values and each strategy's products give the exact field values."""
    a_b, abc = run(lambda a, b: ((a - b) * b, (a * b) * a + a * b), [XS, YS], strategy=strategy)
    assert a_b == [(x - y) * y % P for x, y in zip(XS, YS)]
    assert abc == [(x * y * x + x * y) % P for x, y in zip(XS, YS)]
