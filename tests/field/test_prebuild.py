"""Pre-built Triton source serves a process that cannot compile (the lent GPU machine's case).

`zktensor.prebuild` records the Triton entries a workload uses and copies them into a
folder; with an empty kernel cache and compiling switched off, the Triton target then
finds its kernels there (run here on CPU tensors under the interpreter) and computes
exactly what Python ints give. Without the folder the same call fails with an error that
names the missing kernel and the command that makes it.
"""
import json

import os

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


@pytest.mark.parametrize("argv, message", [(["--curves", "bn256"], "--curves: 'bn256' is not a curve"),
                                           (["--strategies", "fp32"], "--strategies: 'fp32' is not a Triton strategy")])
def test_bad_arguments_are_named(argv, message, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        prebuild.main(argv + ["--out", str(tmp_path / "out")])
    assert e.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_default_curves_cover_every_group():
    """The default pack serves tests/gpu, which runs every group and its curve's fields."""
    from zktensor.algebra.curves import GROUP_NAMES
    assert set(prebuild.CURVES) == {g.split(".")[0] for g in GROUP_NAMES}


@pytest.mark.skipif(os.environ.get("ZKTENSOR_CHECK_PACK") != "1",
                    reason="builds the whole pack (minutes with cold caches): scripts/gpu.sh --pack runs it "
                           "(ZKTENSOR_CHECK_PACK=1)")
def test_pack_covers_the_gpu_tests(tmp_path):
    """What scripts/gpu.sh --pack pre-builds (the default workloads and a proof of one
    fixture per curve) holds every Triton entry that tests/gpu's checks launch: they run
    here on CPU tensors with their values from the host (`prebuild.on_host`), for BN254
    (a proof's curve) and MNT4-753 (one group, no proofs), one strategy, recording the
    entries they look up."""
    import sys
    from pathlib import Path

    import tests.gpu.test_gpu as gpu
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "groth16"))
    from fixture_support import BUILD, FIXTURES
    fx = next(f for f in FIXTURES if f.name == "multiplier")
    if not (BUILD / fx.name / "circuit_final.zkey").exists():
        pytest.skip("fixtures not built (scripts/fixtures.sh)")
    manifest = prebuild.prebuild(tmp_path / "prebuilt", curves=("bn254", "mnt4753"), strategies=("int32",),
                                 proofs=[BUILD / fx.name], progress=lambda m: None)
    with prebuild.recording() as used, prebuild.on_host(), zt.config(target="triton", strategy="int32"):
        for name in ("bn254.fr", "bn254.fq", "mnt4753.fr", "mnt4753.fq"):
            gpu.check_field_ops(name, "int32", "cpu")
        for name in ("bn254.fr", "mnt4753.fr"):
            gpu.check_ntt(name, "int32", 4, "cpu")
        for name in ("bn254.g1", "bn254.g2", "mnt4753.g1"):
            gpu.check_msm(name, "int32", "cpu")
        gpu.check_groth16_proof(fx, "cpu")
        gpu.check_groth16_proof(fx, "cpu", table_budget=1)
    launched = {k for k, (d, _) in used.items() if (d / "kernels.py").exists()}
    assert launched, "no Triton entry recorded"
    missing = {k: sorted(used[k][1]) for k in launched - set(manifest["entries"])}
    assert not missing, f"launched by tests/gpu but not pre-built: {missing}"
