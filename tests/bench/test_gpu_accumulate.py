"""bench/gpu_accumulate.py interpreted on CPU tensors: the rounds it builds sum what they
should (the GPU run is scripts/gpu.sh's `accumulate` step)."""
import pytest
import torch

import zktensor as zt
from bench import gpu_accumulate
from zktensor.kernels import msm_device


@pytest.mark.parametrize("mixed", [False, True], ids=["xyzz", "affine"])
def test_every_pattern_sums_its_lanes(capsys, mixed):
    argv = ["--device", "cpu", "--lanes", "4", "--entries", "3", "--bases", "64"] + (["--mixed"] if mixed else [])
    assert gpu_accumulate.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("sums equal to the reference") == len(gpu_accumulate.PATTERNS)


def test_patterns_read_what_they_say():
    G = zt.group("bn254.g1")
    src = torch.zeros((G.L, G.K, 256), dtype=torch.int32)
    lanes, entries = 8, 4
    _, _, order = gpu_accumulate.round_args(G, src, "coalesced", lanes, entries, 256, "cpu")
    assert order.view(lanes, entries)[3].tolist() == [3, 12, 21, 30]           # j + s·(lanes + 1)
    _, _, order = gpu_accumulate.round_args(G, src, "coalesced", 256, entries, 256, "cpu")
    assert order.view(256, entries)[3].tolist() == [3, 4, 5, 6]                # lanes = bases: no repeats
    _, _, order = gpu_accumulate.round_args(G, src, "hot", lanes, entries, 256, "cpu")
    assert int(order.max()) < gpu_accumulate.HOT_SET
    assert order.view(lanes, entries)[3].tolist() == [12, 13, 14, 15]          # j·entries + s
    _, _, order = gpu_accumulate.round_args(G, src, "random", lanes, entries, 256, "cpu")
    assert 0 <= int(order.min()) and int(order.max()) < 256 and len(set(order.tolist())) > entries


def test_check_fails_on_a_wrong_sum(monkeypatch):
    """The interpreted check compares with the reference: a kernel that leaves a lane's
    sum as its first entry fails it."""
    real = msm_device.launch

    def first_entry_only(kernel, grid, args, interpret, block, max_registers=None):
        args = list(args)
        args[-3] = 1                                      # S: segments of one entry
        return real(kernel, grid, args, interpret, block, max_registers)
    monkeypatch.setattr(msm_device, "launch", first_entry_only)
    with pytest.raises(AssertionError, match="differs from the reference"):
        gpu_accumulate.main(["--device", "cpu", "--lanes", "2", "--entries", "2", "--bases", "64",
                             "--patterns", "random"])


def test_bad_arguments():
    with pytest.raises(SystemExit):
        gpu_accumulate.main(["--device", "cpu", "--patterns", "sideways"])
    with pytest.raises(SystemExit):
        gpu_accumulate.main(["--device", "cpu", "--entries", "1"])
    with pytest.raises(SystemExit):
        gpu_accumulate.main(["--device", "cpu", "--entries", "65", "--patterns", "hot"])
