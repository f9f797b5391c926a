"""bench/gpu_counts.py's count of the accumulation's point formulas, against the kernel's own."""
import zktensor as zt
from bench import gpu_counts
from zktensor.kernels import msm_device
from zktensor.ops.msm import MSMConfig, device
from zktensor.kernels.elementwise import triton_cdiv


def test_accumulation_steps_are_the_kernels(monkeypatch):
    """The interpreter runs a launch's programs one by one, each calling the point formula
    (its longest lane's entries - 1) times: with accumulation launched in blocks of 4 lanes,
    `accumulation_steps` for blocks of 4 must give the calls × 4, launch by launch, which
    holds only if it maps lanes to segments as the kernel does (the first round's lanes
    balanced, the later ones in order). Blocks of one lane idle never (formulas =
    additions). Segments of 3 over buckets of 1 to 5 entries: three rounds, the last of
    them copies."""
    G = zt.group("bn254.g1")
    ks = [0, 1, 1, 5, 7, 7, 7, 2, 9, 15, 15, 15, 15, 15, 3, 12]        # digit = scalar: buckets of 1 to 5
    S, B = 3, 4
    P = G.generator((len(ks),))
    mod = msm_device.module(G, MSMConfig().strategy, "cpu", True)
    calls, seen = [0], []
    orig = mod.padd

    def counted(*a, **k):
        calls[0] += 1
        return orig(*a, **k)
    monkeypatch.setattr(mod, "padd", counted)

    def launch(kernel, grid, args, interpret, block, max_registers=None):
        st = gpu_counts.accumulation_steps(kernel, args, B)
        if st is None:
            msm_device.launch(kernel, grid, args, interpret, block, max_registers)
            return
        calls[0] = 0
        lanes = dict(zip(kernel.arg_names, args))["n_lanes"]
        msm_device.launch(kernel, (triton_cdiv(lanes, B),), args, interpret, B, max_registers)
        seen.append((st, calls[0] * B, gpu_counts.accumulation_steps(kernel, args, 1)))
    monkeypatch.setattr(device, "_launch", launch)
    with zt.config(target="triton"):
        res = device.device_msm(G, G.Fr.tensor(ks), P, MSMConfig(window=5, segment=S), {}, bits=4)
    assert res.to_affine() == [zt.msm(ks, P).to_affine()]           # the CPU target's sum
    assert len(seen) == 3 and seen[-1][0]["steps"] == 0 and seen[1][0]["steps"] > 0
    for st, kernel_steps, one in seen:
        assert st["steps"] == kernel_steps, seen
        assert st["entries"] >= st["additions"] and st["steps"] >= st["additions"]
        assert one["steps"] == one["additions"] == st["additions"]
    sizes = [ks.count(v) for v in set(ks) if v]
    assert seen[0][0]["entries"] == sum(sizes)                    # round 0 reads every nonzero digit
    assert seen[0][0]["additions"] == sum(c - -(-c // S) for c in sizes)   # all but each segment's first
