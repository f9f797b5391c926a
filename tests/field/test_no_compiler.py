"""Conversions in and out of Montgomery form on a machine that cannot compile a CPU kernel.

The lent GPU machine has no MLIR bindings and a CPU unlike the one that filled the
kernel cache: every CPU kernel misses there. `F.tensor`, `from_bytes`, `to_ints` and
`to_bytes` must still work (torch integer arithmetic, `kernels.mont_torch`) and give
exactly what Python ints give; other CPU work must fail with a clear error, not deep
inside the compiler. Simulated here: an empty kernel cache, no pre-built entries and
ZKTENSOR_NO_COMPILER=1 (the same error as a missing torch_mlir).
"""
import pytest

import zktensor as zt
from zktensor.algebra import FIELD_NAMES
from zktensor.kernels import elementwise

from tests.field.values import edge_values, sample


@pytest.fixture
def no_compiler(monkeypatch, tmp_path):
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ZKTENSOR_PREBUILT_DIR", str(tmp_path / "prebuilt"))
    monkeypatch.setenv("ZKTENSOR_NO_COMPILER", "1")
    monkeypatch.setenv("ZKTENSOR_TARGET", "cpu")
    # programs compiled earlier in this process are remembered in memory: forget them here
    monkeypatch.setattr(elementwise, "_programs", {})
    monkeypatch.setattr(elementwise, "_by_object", {})


@pytest.mark.parametrize("name", FIELD_NAMES)
def test_conversions_without_compiler(no_compiler, name):
    F = zt.field(name)
    vals = edge_values(F.p) + sample(F.p, 20, seed=11)
    t = F.tensor(vals)
    R = pow(2, 32 * F.limbs, F.p)
    stored = [sum((int(t.data[j, i]) & 0xFFFFFFFF) << (32 * j) for j in range(F.limbs)) for i in range(len(vals))]
    assert stored == [v * R % F.p for v in vals]            # Montgomery form, computed by torch
    assert t.to_ints() == vals
    raw = b"".join(v.to_bytes(F.bytes, "little") for v in vals)
    assert F.from_bytes(raw).to_ints() == vals
    assert t.to_bytes() == raw
    assert F.tensor([[1, 2], [3, F.p - 1]]).to_ints() == [[1, 2], [3, F.p - 1]]


def test_arithmetic_without_compiler_names_the_problem(no_compiler):
    F = zt.field("bn254.fr")
    a = F.tensor([1, 2, 3])
    with pytest.raises(elementwise.CompilerUnavailable, match="ZKTENSOR_NO_COMPILER"):
        a * a


def test_missing_bindings_are_reported_as_compiler_unavailable(no_compiler, monkeypatch):
    """Without the switch, a miss reaches the compiler; an ImportError there (no torch_mlir)
    becomes CompilerUnavailable, which the conversions fall back from."""
    monkeypatch.delenv("ZKTENSOR_NO_COMPILER")
    import zktensor.passes as passes

    def no_mlir(*a, **k):
        raise ModuleNotFoundError("No module named 'torch_mlir'")
    monkeypatch.setattr(passes, "compile_program", no_mlir)
    F = zt.field("bls12_381.fr")
    vals = sample(F.p, 10, seed=5)
    assert F.tensor(vals).to_ints() == vals
    with pytest.raises(elementwise.CompilerUnavailable, match="torch_mlir"):
        F.tensor(vals) + 1
