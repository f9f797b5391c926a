"""`runtime.aot.resource_usage`: the kernel's own registers from `cuobjdump -res-usage`,
whatever other functions the cubin lists first; `loop_mix`: a main loop's instructions less
what a block-wide branch skips (no GPU, no compile)."""
import pytest

from zktensor.runtime.aot import loop_mix, resource_usage

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


def _sass(body: list[str]) -> str:
    """cuobjdump -sass lines (16 bytes an instruction) from "OPCODE operands" strings."""
    return "\n".join(f"        /*{16 * i:04x}*/                   {op} ;      /* 0x000000000000 */"
                     for i, op in enumerate(body))


def test_loop_mix_skips_block_wide_branches_only():
    """The widest backward branch is the loop (not the inner one); code after a REDUX and its
    predicated forward branch is rare, a plain forward branch's target is not skipped."""
    body = ["S2R R0, SR_TID.X", "MOV R1, 0x0",                                     # 0-1: before
            "DFMA R2, R2, R2, R2",                                                   # 2: loop start
            "STL [R1], R2", "IADD3 R3, R3, 0x1, RZ", "@P0 BRA 0x30",                 # 3-5: inner loop to 3
            "REDUX.OR UR4, R5", "ISETP.NE.AND P1, PT, R4, RZ, PT", "@!P1 BRA 0xb0",  # 6-8: vote, skip to 11
            "DFMA R6, R6, R6, R6", "LDL R7, [R1]",                                   # 9-10: rare
            "SEL R8, R8, R9, P2", "BRA 0xd0",                                        # 11-12: hot, jump to 13
            "LDL R9, [R1]", "@P3 BRA 0x20",                                          # 13-14: hot, back to 2
            "EXIT"]
    r = loop_mix(_sass(body))
    assert r["loop"] == 13 and r["rare"] == 2
    assert r["hot"] == {"DFMA": 1, "STL": 1, "IADD3": 1, "BRA": 4, "REDUX": 1, "ISETP": 1, "SEL": 1, "LDL": 1}
    assert loop_mix(_sass(["MOV R1, 0x0", "@P0 BRA 0x20", "EXIT"])) is None      # forward only
