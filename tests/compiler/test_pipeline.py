"""The pipeline as a whole: ZKTENSOR_PRINT_IR shows every stage; a warm cache needs no MLIR."""
import os
import subprocess
import sys


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
