"""limbs-to-triton: limb-level IR -> Triton source (run here under Triton's interpreter)."""
import random
import struct

import pytest

from compiler_support import P, XS, YS, limbs, parsed, run
from zktensor.ir.builder import ROUND_DOWN
from zktensor.passes import limbs_to_cpu, limbs_to_triton


def test_limbs_to_triton_source():
    module, _ = limbs(lambda a, b: a * b, 2, "int32")
    src = limbs_to_triton.run(module)
    assert "def kernel_0_fn(" in src and "def kernel_0(" in src
    # the kernel and its device function, plus HEADER's compiled fma_rd_2p104
    assert "tl.umulhi" in src and src.count("@triton.jit") == 3
    assert limbs_to_triton.kernels_of(src).startswith("@triton.jit\ndef kernel_0_fn(")
    module, _ = limbs(lambda a, b: a * b, 2, "fp64")
    assert "tl.fma" in limbs_to_triton.run(module)


def test_triton_source_runs():
    (got,) = run(lambda a, b: a * b - b, [XS, YS], strategy="int32", target="triton")
    assert got == [(x * y - y) % P for x, y in zip(XS, YS)]


def test_fp64_split_rounds_down_in_three_float_ops():
    """round_down (the Triton target's fp64): each product is fma_rd, one subtraction and a
    plain fma, with no bias added to the low half; without it, the fourth op is that add."""
    products = 2 * 5 * 5      # BN254: a·b and the reduction's m·p, 5 x 5 limbs each
    ops = lambda text: {k: text.count(k) for k in ("math.fma", ROUND_DOWN, "arith.subf", "arith.addf")}
    down, _ = limbs(lambda a, b: a * b, 2, "fp64", round_down=True)
    near, _ = limbs(lambda a, b: a * b, 2, "fp64")
    assert ops(str(down)) == {"math.fma": 2 * products, ROUND_DOWN: products, "arith.subf": products,
                              "arith.addf": 0}
    assert ops(str(near)) == {"math.fma": 2 * products, ROUND_DOWN: 0, "arith.subf": products,
                              "arith.addf": products}
    src = limbs_to_triton.kernels_of(limbs_to_triton.run(down))
    assert src.count("fma_rd_2p104(") == products and src.count("tl.fma(") == products


def test_round_down_only_for_the_split():
    """The interpreter's fma_rd_2p104 is exact only for the split's c = 2^104: the printer
    refuses a rounded-down fma with any other addend."""
    module, _ = parsed(f"""func.func @f(%a: f64, %b: f64) -> f64 {{
  %c = arith.constant 1.0 : f64
  %r = "math.fma"(%a, %b, %c) {{{ROUND_DOWN}}} : (f64, f64, f64) -> f64
  func.return %r : f64
}}""")
    (func,) = module.body.operations
    block, printer = func.regions[0].blocks[0], limbs_to_triton._Printer()
    printer.names.update({block.arguments[0]: "a", block.arguments[1]: "b"})
    with pytest.raises(NotImplementedError, match="2\\^104"):
        printer.block(block.operations, 1)


def test_cpu_lowering_refuses_round_down():
    """LLVM's fma rounds to nearest: a module with the mark must not reach it."""
    module, ctx = limbs(lambda a, b: a * b, 2, "fp64", round_down=True)
    with pytest.raises(ValueError, match=ROUND_DOWN):
        limbs_to_cpu.lower(limbs_to_cpu.wrap(module), ctx)


def _exact_rd(a: int, b: int) -> float:
    """fma(a, b, 2^104) rounded toward -inf, from Python ints: 2^104 + floor(a·b / 2^52)·2^52."""
    return float(2 ** 104 + (a * b >> 52 << 52))


def test_interpreted_fma_rd_is_exact(tmp_path):
    """HEADER's interpreter version of fma_rd(a, b, 2^104) against Python ints, over 52-bit
    limbs: zero, one, the largest limb, products whose low 52 bits are ties (2^51, where
    round-to-nearest goes to even: up for an odd high half), one either side of a tie, and
    random limbs. Compiled, the same call is libdevice's fma_rd (tests/gpu)."""
    from zktensor.runtime.triton_modules import load_triton_module
    import torch
    top = 2 ** 52 - 1
    pairs = [(0, 0), (1, 1), (top, top), (top, 1), (1, top), (2 ** 51, 1), (2 ** 51, 3),
             (2 ** 51, 2 ** 52 - 3), (2 ** 51 + 1, 2 ** 51 - 1)]
    pairs += [(2 ** 26 * q, 2 ** 25 * k) for q, k in ((1, 1), (3, 5), (2 ** 26 - 1, 2 ** 27 - 1))]
    for k in (2 ** 51 - 1, 2 ** 51 + 1, 3 * 2 ** 51 - 1, 3 * 2 ** 51 + 1):   # L = 2^51 ± 1
        pairs.append((k, 1))
    rng = random.Random(7)
    pairs += [(rng.getrandbits(52), rng.getrandbits(52)) for _ in range(500)]
    src = limbs_to_triton.HEADER + '''

@triton.jit
def k(a, b, out, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    c = tl.full([], 2.0 ** 104, tl.float64)
    tl.store(out + i, fma_rd_2p104(tl.load(a + i, mask=m), tl.load(b + i, mask=m), c), mask=m)
'''
    path = tmp_path / "kernels.py"
    path.write_text(src)
    mod = load_triton_module(str(path), interpret=True)
    a = torch.tensor([float(x) for x, _ in pairs], dtype=torch.float64)
    b = torch.tensor([float(y) for _, y in pairs], dtype=torch.float64)
    out = torch.empty_like(a)
    mod.k[(len(pairs) + 127) // 128,](a, b, out, len(pairs), BLOCK=128)
    bits = lambda x: struct.pack("<d", x)
    got = [bits(x) for x in out.tolist()]
    assert got == [bits(_exact_rd(x, y)) for x, y in pairs]
    assert any(x * y % 2 ** 52 == 2 ** 51 for x, y in pairs)     # ties are in the set


def test_round_down_with_ifma_is_refused():
    """IFMA's products have no split to round: asking for both is a caller's mistake."""
    with pytest.raises(ValueError, match="IFMA"):
        limbs(lambda a, b: a * b, 2, "fp64", lanes=8, ifma=True, round_down=True)
