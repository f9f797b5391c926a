"""Each pass checked on its printed IR, and the pipeline's switches and cache."""
import os
import re
import subprocess
import sys

import pytest

import zktensor as zt
from zktensor.algebra import field
from zktensor.ir import dialects
from zktensor.ir.program import trace
from zktensor.passes import canonicalize, field_io, field_to_limbs, fuse_elementwise, limbs_to_cpu, limbs_to_triton
from zktensor.passes.limb_arith import LAZY_OPS

F = field("bn254.fr")


def parsed(text):
    ctx = dialects.context()
    return dialects.parse(text, ctx), ctx


def field_stage(fn, n, passes=()):
    module, _ = parsed(field_io.write([field_io.FieldFunc.from_program(trace(fn, F, n))]))
    for p in passes:
        module, _ = parsed(field_io.write(p.run(field_io.read(module))))
    return module


def test_trace_prints_field_dialect():
    text = str(field_stage(lambda a, b, c: a * b - c * c, 3))
    assert text.count('"field.mul"') == 2 and text.count('"field.sub"') == 1
    assert '!field.elem<"bn254.fr">' in text


def test_irdl_verifier_rejects_wrong_types():
    with pytest.raises(ValueError, match="invalid IR"):
        parsed('func.func @f(%a: i32) -> i32 {\n %b = "field.neg"(%a) : (i32) -> i32\n return %b : i32\n}')


@pytest.mark.parametrize("fn,present,absent", [
    (lambda a: a * a, ['"field.square"'], ['"field.mul"']),                       # x·x = x²
    (lambda a: a + 0, [], ['"field.add"']),                                       # x + 0 = x
    (lambda a: a * 1 + a * 1, ['"field.add"'], ['"field.mul"']),                  # x·1 = x
    (lambda a: a * (F.p - 1) + a, ['"field.neg"'], ['"field.mul"']),              # x·(−1) = −x
    (lambda a: (F.p - 1) * a + a, ['"field.neg"'], ['"field.mul"']),
    (lambda a: a * (2 + 3), ['value = "5"'], ['value = "2"']),                    # constant folding
    (lambda a: a * a + a * a, ['"field.square"'], []),                            # CSE
    (lambda a: a ** 2, ['"field.square"'], ['"field.pow"']),
])
def test_canonicalize_rules(fn, present, absent):
    text = str(field_stage(fn, 1, [canonicalize]))
    for s in present:
        assert s in text
    for s in absent:
        assert s not in text


def test_canonicalize_cse_counts():
    text = str(field_stage(lambda a: a * a + a * a, 1, [canonicalize]))
    assert text.count('"field.square"') == 1


def test_fuse_elementwise_outlines_one_kernel():
    text = str(field_stage(lambda a, b, c: a * b - c * c, 3, [canonicalize, fuse_elementwise]))
    assert "func.func @kernel_0" in text and 'zktensor.kind = "elementwise"' in text
    assert "call @kernel_0" in text and "func.func @main" in text


def test_fuse_elementwise_passes_inputs_through():
    text = str(field_stage(lambda a, b: (a * b, b), 2, [canonicalize, fuse_elementwise]))
    assert "call @kernel_0(%arg0, %arg1)" in text


def test_fuse_elementwise_cuts_after_max_products():
    """max_products=2: a chain of 5 products becomes 3 kernels, values handed on through
    @main (printed IR), and the program's value is unchanged (run on the CPU target)."""
    from zktensor.passes import compile_program
    from zktensor.kernels.elementwise import CompiledProgram

    def f(a, b):
        x = a * b
        y = x * x + a       # a square and an add
        z = y * b
        w = z * z - x
        return w * a
    funcs = fuse_elementwise.run(canonicalize.run(field_io.read(field_stage(f, 2))), max_products=2)
    text = str(parsed(field_io.write(funcs))[0])
    assert [fn.name for fn in funcs] == ["kernel_0", "kernel_1", "kernel_2", "main"]
    assert text.count("call @kernel_") == 3
    counts = [sum(n.op in fuse_elementwise.PRODUCTS for n in fn.nodes) for fn in funcs[:3]]
    assert counts == [2, 2, 1]
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        plan = compile_program(trace(f, F, 2), "int64", "cpu", d, max_products=2)
        (Path(d) / "meta.json").write_text(__import__("json").dumps(plan))
        run = CompiledProgram(Path(d), "cpu", F.limbs32)
        xs, ys = [3, F.p - 1, 12345678901234567890], [5, 7, F.p - 2]
        a, b = zt.field(F.name).tensor(xs), zt.field(F.name).tensor(ys)
        (out,) = run(a.data, b.data)
        got = zt.FieldTensor(zt.field(F.name), out).to_ints()
    p = F.p
    want = []
    for x, y in zip(xs, ys):
        xx = x * y % p
        yy = (xx * xx + x) % p
        zz = yy * y % p
        want.append((zz * zz - xx) * x % p)
    assert len(plan["calls"]) == 3 and got == want


def test_fuse_elementwise_cuts_before_max_inputs():
    """max_inputs=2: no kernel reads more than 2 values from outside it (inputs of the
    program or of earlier kernels)."""
    def f(a, b, c, d):
        return (a - b) + (c - d), a * d
    funcs = fuse_elementwise.run(canonicalize.run(field_io.read(field_stage(f, 4))), max_inputs=2)
    kernels = [fn for fn in funcs if fn.name != "main"]
    assert len(kernels) >= 3 and all(fn.n_args <= 2 for fn in kernels)
    whole = fuse_elementwise.run(canonicalize.run(field_io.read(field_stage(f, 4))))
    assert [fn.n_args for fn in whole if fn.name != "main"] == [4]


def limbs(fn, n, strategy, **kw):
    module = field_stage(fn, n, [canonicalize, fuse_elementwise])
    return parsed(field_to_limbs.run(field_io.read(module), strategy, **kw))


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


def test_limbs_to_triton_source():
    module, _ = limbs(lambda a, b: a * b, 2, "int32")
    src = limbs_to_triton.run(module)
    assert "def kernel_0_fn(" in src and "def kernel_0(" in src
    assert "tl.umulhi" in src and src.count("@triton.jit") == 2
    module, _ = limbs(lambda a, b: a * b, 2, "fp64")
    assert "tl.fma" in limbs_to_triton.run(module)


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
    import re
    assert len(re.findall(r"func.call @kernel_0\(.*\) \{no_inline\}", wrapped)) == 2
    assert re.search(r"func.call @kernel_0_v8\([^)]*\) :", wrapped)
    assert len(re.findall(r"llvm.call @kernel_0\(", llvm)) == 2 and "@kernel_0_v8(" not in llvm


def test_print_ir_shows_every_stage(tmp_path):
    code = ("import zktensor as zt\nF = zt.field('bn254.fr')\n"
            "zt.jit(lambda a, b: a * b + 987654321)(F.tensor([1, 2]), F.tensor([3, 4]))\n")
    env = dict(os.environ, ZKTENSOR_PRINT_IR="1", ZKTENSOR_CACHE_DIR=str(tmp_path))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    for stage in ("trace", "canonicalize", "fuse-elementwise", "field-to-limbs", "limbs-to-cpu (llvm)"):
        assert f"after {stage}" in res.stderr, stage


def test_warm_cache_runs_without_mlir(tmp_path):
    env = dict(os.environ, ZKTENSOR_CACHE_DIR=str(tmp_path))
    prog = ("import sys, zktensor as zt\nF = zt.field('bn254.fr')\n"
            "c = F.tensor([3]) * F.tensor([5]) - 1\nassert c.to_ints() == [14]\n"
            "print('torch_mlir' in sys.modules)\n")
    first = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.strip() == "True"        # cold cache: compiled
    assert second.stdout.strip() == "False"      # warm cache: MLIR never imported
