"""Pre-built Triton source serves a process that cannot compile (the lent GPU machine's case).

`zktensor.prebuild` records the Triton entries a workload uses and copies them into a
folder; with an empty kernel cache and compiling switched off, the Triton target then
finds its kernels there (run here on CPU tensors under the interpreter) and computes
exactly what Python ints give. Without the folder the same call fails with an error that
names the missing kernel and the command that makes it.
"""
import json

import pytest

import zktensor as zt
from zktensor import prebuild
from zktensor.kernels import elementwise


def _mul(curve, progress):
    F = zt.field(f"{curve}.fr")
    (F.tensor([1, 2, F.p - 1]) * F.tensor([3, 4, F.p - 1])).to_ints()


def test_prebuilt_source_runs_without_a_compiler(tmp_path, monkeypatch):
    out = tmp_path / "prebuilt"
    manifest = prebuild.prebuild(out, curves=("bn254",), strategies=("int32",), workloads=(_mul,),
                                 progress=lambda m: None)
    assert manifest["entries"], "no Triton entry recorded"
    assert all((out / "kernels" / k / "kernels.py").exists() for k in manifest["entries"])
    assert not list(out.glob("kernels/*/kernels.so")), "a CPU entry was copied"
    assert json.loads((out / "manifest.json").read_text())["entries"] == manifest["entries"]

    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("ZKTENSOR_NO_COMPILER", "1")
    monkeypatch.setattr(elementwise, "_programs", {})
    monkeypatch.setattr(elementwise, "_by_object", {})
    F = zt.field("bn254.fr")
    p = F.p
    monkeypatch.setenv("ZKTENSOR_PREBUILT_DIR", str(tmp_path / "nothing"))
    with zt.config(target="triton", strategy="int32"):
        with pytest.raises(elementwise.CompilerUnavailable, match="zktensor.prebuild"):
            F.tensor([5]) * F.tensor([7])
    monkeypatch.setenv("ZKTENSOR_PREBUILT_DIR", str(out))
    with zt.config(target="triton", strategy="int32"):
        got = (F.tensor([1, 2, p - 1]) * F.tensor([3, 4, p - 1])).to_ints()
    assert got == [3, 8, 1]
