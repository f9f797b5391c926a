"""runtime.target: which strategy and target a computation uses; int64 on Triton in one place."""
import pytest

import zktensor as zt
from zktensor.ir.program import trace
from zktensor.algebra import field
from zktensor.passes import compile_program
from zktensor.runtime.target import STRATEGIES, check, choose


@pytest.fixture
def gpu(monkeypatch):
    """A CUDA device of a given compute capability, as `choose` sees one (none is needed)."""
    import torch
    from zktensor.runtime import target
    cap = {"now": (9, 0)}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=None: cap["now"])
    target._gpu_default.cache_clear()
    yield cap
    target._gpu_default.cache_clear()


def test_gpu_default_follows_the_fp64_rate(monkeypatch, gpu):
    """fp64 on the GPUs with full-rate FP64 (A100, H100/H200, ...), int32 on the others."""
    from zktensor.runtime import target
    from zktensor.tune import costmodel
    monkeypatch.delenv("ZKTENSOR_STRATEGY", raising=False)
    monkeypatch.delenv("ZKTENSOR_TARGET", raising=False)
    for cap, want in [((9, 0), "fp64"), ((8, 0), "fp64"), ((7, 0), "fp64"), ((10, 0), "fp64"),
                      ((8, 9), "int32"), ((8, 6), "int32"), ((7, 5), "int32"), ((12, 0), "int32")]:
        gpu["now"] = cap
        target._gpu_default.cache_clear()
        assert choose("cuda") == (want, "triton"), cap
        assert costmodel.rules("mul", None, 64, "cuda:0")["strategy"] == want, cap    # the ops' rules agree
    assert choose("cpu", target="triton")[0] == "int32"      # the interpreter's, whatever the GPU


def test_defaults_and_order(monkeypatch, gpu):
    monkeypatch.delenv("ZKTENSOR_STRATEGY", raising=False)
    monkeypatch.delenv("ZKTENSOR_TARGET", raising=False)
    gpu["now"] = (8, 9)
    assert choose("cuda") == ("int32", "triton")
    assert choose("cpu")[1] == "cpu" and choose("cpu")[0] in ("fp64", "int64")
    monkeypatch.setenv("ZKTENSOR_STRATEGY", "fp64")
    assert choose("cuda")[0] == "fp64"
    gpu["now"] = (9, 0)
    monkeypatch.setenv("ZKTENSOR_STRATEGY", "int32")               # the environment over the default
    assert choose("cuda")[0] == "int32"
    monkeypatch.setenv("ZKTENSOR_STRATEGY", "fp64")
    with zt.config(strategy="int32"):                 # zt.config over the environment
        assert choose("cpu") == ("int32", "cpu")
        assert choose("cpu", strategy="int64") == ("int64", "cpu")      # the argument over both
    with pytest.raises(ValueError, match="CPU target runs on CPU tensors"):
        choose("cuda", target="cpu")


def test_int64_on_triton(monkeypatch, tmp_path):
    """Asked without naming the target (environment, zt.config), int64 takes Triton's nearest,
    int32; the compiler, told both, refuses the pair with one line naming what Triton takes."""
    monkeypatch.setenv("ZKTENSOR_STRATEGY", "int64")
    assert choose("cuda") == ("int32", "triton")
    assert choose("cpu", target="triton") == ("int32", "triton")
    assert "int64" not in STRATEGIES["triton"] and "int64" in STRATEGIES["cpu"]
    check("int64", "cpu")
    with pytest.raises(ValueError, match="'int64' does not compile for the triton target; it takes 'int32' or 'fp64'"):
        check("int64", "triton")
    with pytest.raises(ValueError, match="does not compile for the triton target"):
        compile_program(trace(lambda a: a * a, field("bn254.fr"), 1), "int64", "triton", str(tmp_path))
