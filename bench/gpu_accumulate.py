"""Why the device MSM's accumulation takes its time: its kernel alone on a round it builds, varied.

    python -m bench.gpu_accumulate --json acc.json                       # on a GPU
    python -m bench.gpu_accumulate --device cpu --lanes 4 --entries 3 --bases 64   # interpreted

On the one GPU measured so far, most of the device MSM's time was `accumulate`
(bench/results/gpu/h200_2026-11-26b.md), far more than its SASS counts bound the
arithmetic to (bench/results/gpu_estimate.md, an estimate). What makes up the difference
can only be measured on a GPU. This script times one `accumulate` launch (or
`accumulate_affine`, --mixed) on a synthetic round:
`--lanes` lanes, each adding `--entries` bases into one sum (one segment a bucket, so every
lane runs every trip), with the bases read in one of three patterns:

    random     each entry a random base of `--bases`: the MSM's case, a gather a step
    coalesced  lane j's entry s is base (j + s·(lanes + 1)) mod bases: neighbouring lanes
               read neighbouring columns, and a lane's entries differ (with lanes = bases,
               lane j reads j, j + 1, ...)
    hot        lane j's entry s is base (j·entries + s) mod 64: a set that stays in cache,
               so the time is the arithmetic's

Each pattern runs for each register cap (`--caps`, ptxas .maxnreg: more resident warps,
more spills) and each BLOCK (`--blocks`: one lane a thread). How to read the rows:
- `hot` about as slow as `random`: the gathers are not the cost;
- a cap's extra warps faster despite its spills: the kernel waits on latency, not on issue;
- `coalesced` faster than `random`: the gathers' sectors are.

Times are the device's (CUDA events): the median of `--runs` launches after a warm one.
Each row has the registers and spills of the binary, and derived from the time: ns per
addition, and SM cycles per warp-addition on one of an SM's four schedulers, at the SM
clock nvidia-smi reports as its maximum. Set the latter against the loop trip's SASS
instruction count (`bench/sass_report.py`): their ratio is the cycles an instruction
took.

Each row also checks the first 8 lanes' sums against the reference on Python ints
(`algebra.curves.lincomb`); a wrong one is flagged and the exit status is 1. On CPU
tensors the kernel runs interpreted and every lane is checked: that tests the script and
the round it builds, not a speed.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

PATTERNS = ("random", "coalesced", "hot")
HOT_SET = 64
CHECKED = 8             # on a GPU, lanes whose sums each row checks against the reference


def round_args(G, src, pattern: str, lanes: int, entries: int, n: int, device, seed: int = 3):
    """The accumulation's arguments for a round of `lanes` buckets of `entries` entries
    each, one segment a bucket (lane j is bucket j), every digit positive; the output
    array (L, K, lanes); and `order` (entry s of lane j reads base order[j·entries + s])."""
    import torch
    from zktensor.kernels import msm_device
    j = torch.arange(lanes, dtype=torch.int64).repeat_interleave(entries)
    s = torch.arange(entries, dtype=torch.int64).repeat(lanes)
    if pattern == "random":
        order = torch.randint(n, (lanes * entries,), generator=torch.Generator().manual_seed(seed))
    elif pattern == "coalesced":
        order = (j + s * (lanes + 1)) % n
    elif pattern == "hot":
        if hot_refused(entries, n):
            raise ValueError(hot_refused(entries, n))
        order = (j * entries + s) % HOT_SET
    else:
        raise ValueError(f"unknown pattern {pattern!r}; choose from {PATTERNS}")
    seg_end = torch.arange(1, lanes + 1, dtype=torch.int64)
    start = torch.arange(lanes + 1, dtype=torch.int64) * entries
    digits = torch.ones(n, dtype=torch.int32)
    out = torch.empty((G.L, G.K, lanes), dtype=torch.int32, device=device)
    index = [t.to(device) for t in (order, digits, seg_end, start)]
    args = (msm_device.strides(src) + index[:2] + [n] + index[2:] + [index[2], index[2]]    # ends, last
            + msm_device.strides(out) + [lanes, lanes, lanes.bit_length(), entries, 1, 0])    # indirect, unbalanced
    return args, out, order


def hot_refused(entries: int, n: int) -> str | None:
    """Why the hot pattern cannot build a round of `entries` entries a lane over n bases, or None."""
    if entries > HOT_SET or n < HOT_SET:
        return f"the hot pattern takes --entries <= {HOT_SET} and --bases >= {HOT_SET}"
    return None


def sm_clock_mhz() -> int | None:
    """The SM clock's maximum (MHz) as nvidia-smi reports it, or None."""
    try:
        res = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
        return int(res.stdout.split()[0]) if res.returncode == 0 else None
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return None


def time_one(kernel, args, lanes: int, block: int, cap, runs: int) -> dict:
    """Median device time (ms) of `runs` launches after a warm one, and the binary's
    registers and spills."""
    import torch
    from zktensor.kernels import msm_device
    grid = (-(-lanes // block),)
    compiled = msm_device.launch(kernel, grid, args, False, block, cap)
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        msm_device.launch(kernel, grid, args, False, block, cap)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return {"ms": statistics.median(times), "ms_all": times,
            "registers": getattr(compiled, "n_regs", None), "spills": getattr(compiled, "n_spills", None)}


def sums_match(G, P, out, order, lanes: int, entries: int) -> bool:
    """Whether the first `lanes` sums in `out` are the reference sums of their bases (Python
    ints, `algebra.curves.lincomb`), reading only those bases back."""
    from zktensor.algebra.curves import group as group_record, lincomb
    from zktensor.points import PointTensor
    g = group_record(G.name)
    idx = order[:lanes * entries].to(P.data.device)
    pts = PointTensor(G, P.data[:, :, idx]).to_affine()
    want = [lincomb(g, None, [(1, Q) for Q in pts[i * entries:(i + 1) * entries]]) for i in range(lanes)]
    return PointTensor(G, out[:, :, :lanes].contiguous()).to_affine() == want


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--group", default="bn254.g1")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--lanes", type=int, default=1 << 20, help="lanes (buckets) of the round")
    ap.add_argument("--entries", type=int, default=16, help="entries a lane adds (its segment)")
    ap.add_argument("--bases", type=int, default=1 << 20, help="distinct bases the entries read")
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--caps", default="0,168,128", help="register caps, 0: ptxas's choice (or the group's record)")
    ap.add_argument("--blocks", default="64", help="BLOCK values (lanes a program; one lane a thread)")
    ap.add_argument("--mixed", action="store_true", help="accumulate_affine over affine bases (MSMConfig.mixed)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", default=None, help="also write the rows to this file (after every row)")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import torch

    import zktensor as zt
    from bench.msm import make_bases
    from zktensor.kernels import msm_device
    from zktensor.ops.msm import MSMConfig, device as msm_dev
    from zktensor.runtime.target import choose
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA GPU here (--device cpu runs the kernel interpreted and checks it)")
    if a.lanes < 1 or a.entries < 2 or a.bases < 1:
        ap.error("--lanes >= 1, --entries >= 2 (the first entry starts a sum) and --bases >= 1")
    patterns = a.patterns.split(",")
    for p in patterns:
        if p not in PATTERNS:
            ap.error(f"--patterns: unknown {p!r}; choose from {', '.join(PATTERNS)}")
    if "hot" in patterns and hot_refused(a.entries, a.bases):
        ap.error(hot_refused(a.entries, a.bases))
    G = zt.group(a.group)
    P = make_bases(G, a.bases, device=a.device)
    src = msm_dev.AffinePoints.of(P).data if a.mixed else P.data
    strategy = choose(a.device)[0]
    mod = msm_device.module(G, strategy, a.device, interpret=a.device == "cpu")
    kernel = mod.accumulate_affine if a.mixed else mod.accumulate
    name = "accumulate_affine" if a.mixed else "accumulate"
    if a.device == "cpu":
        with zt.config(target="triton"):
            for p in patterns:
                args, out, order = round_args(G, src, p, a.lanes, a.entries, a.bases, "cpu")
                msm_device.launch(kernel, (1,), args, True, 1 << (a.lanes - 1).bit_length())
                if not sums_match(G, P, out, order, a.lanes, a.entries):
                    raise AssertionError(f"{name} {p}: a lane's sum differs from the reference")
                print(f"{a.group} {name} {strategy} {p}: {a.lanes} lanes x {a.entries} entries, "
                      f"sums equal to the reference (interpreted; no time)", flush=True)
        return 0
    clock = sm_clock_mhz()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    additions = a.lanes * (a.entries - 1)                # the first entry starts the sum
    rounds = {p: round_args(G, src, p, a.lanes, a.entries, a.bases, "cuda") for p in patterns}
    rows, wrong = [], 0
    for block in [int(b) for b in a.blocks.split(",")]:
        for cap in [int(c) or None for c in a.caps.split(",")]:
            cap = cap or msm_dev.register_cap(G, MSMConfig())
            for p in patterns:
                args, out, order = rounds[p]
                r = time_one(kernel, args, a.lanes, block, cap, a.runs)
                r["checked_lanes"] = min(CHECKED, a.lanes)
                r["sums_exact"] = sums_match(G, P, out, order, r["checked_lanes"], a.entries)
                wrong += not r["sums_exact"]
                r.update(group=a.group, kernel=name, strategy=strategy, pattern=p, block=block, max_registers=cap,
                         lanes=a.lanes, entries=a.entries, bases=a.bases, additions=additions,
                         ns_per_addition=r["ms"] * 1e6 / additions, sm_clock_mhz=clock, sms=sms)
                # a warp-addition is 32 lanes' step; an SM has four schedulers
                r["cycles_per_warp_addition"] = (r["ms"] * 1e-3 * clock * 1e6 * sms * 4 / (additions / 32)
                                                 if clock else None)
                rows.append(r)
                cyc = f"{r['cycles_per_warp_addition']:8.0f}" if clock else "       -"
                print(f"{a.group} {name} {strategy} block {block:3d} cap {str(cap):>4s} {p:9s} "
                      f"{r['ms']:8.3f} ms  {r['ns_per_addition']:7.3f} ns/add  {cyc} cycles/warp-add  "
                      f"regs {r['registers']} spills {r['spills']}"
                      + ("" if r["sums_exact"] else "  WRONG SUMS (against the reference)"), flush=True)
                if a.json:
                    Path(a.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
