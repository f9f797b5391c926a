"""`zktensor warmup`'s own logic: its arguments, its steps, and a compile pass's tolerance
(only there may a step's call fail and the step go on). The GPU compile pass itself runs
in tests/gpu/test_gpu_compile_pass.py and scripts/gpu.sh."""
import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zktensor.groth16 import warmup

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "zktensor.cli", "warmup", *args],
                          capture_output=True, text=True)


def test_zkey_and_wtns_go_together_and_must_exist(tmp_path):
    r = _cli("--zkey", str(DEMO / "demo.zkey"))
    assert r.returncode == 2 and "--zkey and --wtns go together" in r.stderr
    r = _cli("--zkey", str(tmp_path / "none.zkey"), "--wtns", str(DEMO / "demo.wtns"))
    assert r.returncode == 2 and "none.zkey: no such file" in r.stderr


def test_the_key_step_only_with_a_key():
    assert "key" not in warmup.steps("cpu") and "key" not in warmup.steps("cuda")
    assert warmup.steps("cpu", key=True)[-1] == "key" and warmup.steps("cuda", key=True, ops=True) == (
        "field", "ntt", "msm_g1", "msm_g2", "prover", "key")
    # on a GPU with a key: its proof alone (the other steps compile kernels it never launches)
    assert warmup.steps("cuda", key=True) == ("key",)
    assert warmup.steps("cuda") == ("field", "ntt", "msm_g1", "msm_g2", "prover")


def test_the_stamp_names_the_key(tmp_path):
    a = warmup._stamp(["bn254"], "cpu")
    b = warmup._stamp(["bn254"], "cpu", (DEMO / "demo.zkey", DEMO / "demo.wtns"))
    assert a != b
    key = (DEMO / "demo.zkey", DEMO / "demo.wtns")
    assert warmup._stamp(["bn254"], "cuda", key) != warmup._stamp(["bn254"], "cuda", key, ops=True)


def test_a_call_fails_the_step_except_in_a_compile_pass(monkeypatch):
    monkeypatch.delenv(warmup.SHARD_ENV, raising=False)
    with pytest.raises(ZeroDivisionError):
        with warmup._attempt():
            1 / 0
    monkeypatch.setenv(warmup.SHARD_ENV, "0/2")
    done = []
    with warmup._attempt():
        1 / 0
    done.append(1)
    assert done == [1]


def test_the_key_step_proves_with_the_users_key(monkeypatch, capsys):
    monkeypatch.setenv(warmup.KEY_ENV, os.pathsep.join([str(DEMO / "demo.zkey"), str(DEMO / "demo.wtns")]))
    monkeypatch.delenv(warmup.SHARD_ENV, raising=False)
    warmup.run_step("key", "bn254", "cpu")
    ns = argparse.Namespace(curves="bn254", jobs=1, force=False, device="cpu", zkey=None, wtns=None)
    assert warmup.run(argparse.Namespace(**{**vars(ns), "curves": "nope"})) == 2


LAUNCHES = r"""
import os, sys, torch
import triton.runtime.interpreter as interp
from zktensor.groth16 import warmup

run, seen = interp.InterpretedFunction.run, set()


def spec(v):        # what Triton specializes a kernel on: dtypes, 16-byte alignment, ints == 1 or % 16
    if isinstance(v, torch.Tensor):
        return ("T", str(v.dtype), v.data_ptr() % 16 == 0)
    if isinstance(v, int) and not isinstance(v, bool):
        return ("i", v == 1, v % 16 == 0, -2**31 <= v < 2**31)
    return repr(v)


def launch(self, *args, grid, warmup, **kw):
    seen.add((self.fn.__module__, self.fn.__name__, tuple(map(spec, args)),
              tuple(sorted((k, spec(v)) for k, v in kw.items()))))
    if not os.environ.get(warmup_env):
        return run(self, *args, grid=grid, warmup=warmup, **kw)
    for a in (*args, *kw.values()):     # as a compile pass does with a kernel another process owns
        if isinstance(a, torch.Tensor):
            a.zero_()


warmup_env = warmup.SHARD_ENV
interp.InterpretedFunction.run = launch
for step in sys.argv[1:]:
    warmup.run_step(step, "bn254", "cpu")
print(len(seen), hash(frozenset(seen)))
"""


@pytest.mark.parametrize("steps", [("field", "ntt")])
def test_a_compile_pass_launches_every_kernel_a_real_run_does(steps):
    """Simulated on the Triton interpreter: with every launch skipped and its tensors zeroed
    (a kernel another process of the pass owns; here all of them), each warmup call still
    reaches every (kernel, specialization) that it reaches with real values, so the pass
    misses nothing (before: batch_inverse's zero check stopped the field step ahead of the
    inversion's kernels, which then compiled one at a time after the pass)."""
    env = {k: v for k, v in os.environ.items() if k not in (warmup.SHARD_ENV, warmup.CLAIMS_ENV)}
    env.update(ZKTENSOR_TARGET="triton", ZKTENSOR_STRATEGY="fp64", PYTHONHASHSEED="0")

    def launched(**extra):
        out = subprocess.run([sys.executable, "-c", LAUNCHES, *steps], capture_output=True, text=True,
                             env=dict(env, **extra), timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.split()
    real = launched()
    assert int(real[0]) > 5
    assert launched(**{warmup.SHARD_ENV: "0/1"}) == real


def test_the_prover_step_runs_the_path_without_torch(monkeypatch):
    """On the CPU the prover step also makes a new key's rows and proves without torch (the
    first `zktensor prove` with a key): in a table cache of its own, gone afterwards, so the
    user's cache is left as it was."""
    from zktensor.groth16 import numpy_prover
    from zktensor.kernels import msm_small_cpu
    if not msm_small_cpu.available():
        pytest.skip("the prover without torch needs the lanes loop")
    seen = []
    real = numpy_prover.NumpyProver.load

    def load(path, **kw):
        seen.append((Path(path).name, os.environ["ZKTENSOR_TABLE_CACHE_DIR"]))
        prover = real(path, **kw)
        assert any(Path(seen[-1][1]).iterdir())            # its rows were made there
        return prover
    monkeypatch.setattr(numpy_prover.NumpyProver, "load", load)
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE_DIR", "/nonexistent/user-cache")
    warmup._without_torch("bn254")
    assert [name for name, _ in seen] == ["demo.zkey"] and not Path(seen[0][1]).exists()
    assert os.environ["ZKTENSOR_TABLE_CACHE_DIR"] == "/nonexistent/user-cache"
    warmup._without_torch("bls12_381")                       # its generators' rows and checks: no error
