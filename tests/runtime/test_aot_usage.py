"""`runtime.aot.resource_usage`: the kernel's own registers from `cuobjdump -res-usage`,
whatever other functions the cubin lists first (no GPU, no compile)."""
import pytest

from zktensor.runtime.aot import resource_usage

REPORT = """Resource usage:
 Common:
  GLOBAL:0
 Function __internal_0_$__cuda_sm20_div_s64:
  REG:32 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:0 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function chain:
  REG:255 STACK:464 SHARED:1024 LOCAL:0 CONSTANT[0]:704 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_each_function_its_own_line():
    u = resource_usage(REPORT)
    assert u["chain"]["REG"] == 255 and u["chain"]["STACK"] == 464 and u["chain"]["LOCAL"] == 0
    assert u["__internal_0_$__cuda_sm20_div_s64"]["REG"] == 32
    assert "CONSTANT" not in u["chain"]             # an indexed bank is not a resource we read


def test_no_function_is_an_error():
    with pytest.raises(RuntimeError, match="gave no function's registers"):
        resource_usage("Resource usage:\n Common:\n  GLOBAL:0\n")
