"""Where a device MSM's time goes: per-kernel GPU time of `zt.msm`, from torch's profiler.

    python -m bench.gpu_profile --group bn254.g1 --log-sizes 16,20 --json prof.json     # on a GPU
    python -m bench.gpu_profile --device cpu --log-sizes 10                              # the same on CPU ops

The timed calls of bench/msm.py give one number per size. On the first lent GPU most of
each call was a part that hardly grew with the size (bench/results/gpu/h200_2026-11-26.md).
This script names the kernels that make up that part. For each size it runs one warm
call, then `--calls` calls under `torch.profiler` with CUDA activities, each call ended by
a synchronisation. It prints every kernel's launches, total and mean device time per MSM,
and its share of the device time, beside the wall time per call. On a CPU tensor it prints
the CPU ops instead, which only tests the script here.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def profile_one(group: str, log_n: int, device: str, calls: int, prepared: bool, weighted: bool = False,
                mixed: bool = False, point_major: bool = False) -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile

    import zktensor as zt
    from bench.msm import make_bases, make_scalars
    from zktensor.runtime.target import choose
    G = zt.group(group)
    n = 1 << log_n
    P = make_bases(G, n, device=device)
    k = make_scalars(G, n, "dense").to(device)
    cfg = zt.MSMConfig(weighted=weighted, mixed=mixed, point_major=point_major)
    target = zt.msm_prepare(P, config=cfg if mixed or point_major else None) if prepared or weighted or mixed else P
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    zt.msm(k, target, cfg)                       # compiles, draws the bucket offsets (and makes the table)
    sync()
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    t0 = time.perf_counter()
    with profile(activities=acts) as prof:
        for _ in range(calls):
            zt.msm(k, target, cfg)
            sync()
    wall = (time.perf_counter() - t0) / calls
    rows = []
    for e in prof.key_averages():
        dev_us = getattr(e, "self_device_time_total", None)
        if dev_us is None:                       # older torch
            dev_us = getattr(e, "self_cuda_time_total", 0)
        us = dev_us if cuda else e.self_cpu_time_total
        if us <= 0:
            continue
        rows.append({"name": e.key, "count": e.count // calls, "us_per_msm": us / calls})
    rows.sort(key=lambda r: -r["us_per_msm"])
    total = sum(r["us_per_msm"] for r in rows)
    for r in rows:
        r["share"] = r["us_per_msm"] / total if total else 0.0
    return {"group": group, "n": n, "device": device, "strategy": choose(device)[0], "prepared": prepared,
            "weighted": weighted, "mixed": mixed, "point_major": point_major,
            "calls": calls, "wall_ms_per_msm": wall * 1e3, "timed": "device" if cuda else "cpu",
            "total_ms_per_msm": total / 1e3, "kernels": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--group", default="bn254.g1")
    ap.add_argument("--log-sizes", default="16,20")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--prepared", action="store_true", help="GZKP prepared bases (zt.msm_prepare)")
    ap.add_argument("--weighted", action="store_true", help="the device program on the bases' weighted table "
                                                            "(MSMConfig.weighted: no window combination)")
    ap.add_argument("--mixed", action="store_true", help="prepared bases kept affine (MSMConfig.mixed: "
                                                         "mixed additions in the first accumulation round)")
    ap.add_argument("--point-major", action="store_true", help="point arrays point-major (MSMConfig.point_major)")
    ap.add_argument("--top", type=int, default=15, help="kernels printed per size")
    ap.add_argument("--json", default=None, help="also write the profiles to this file")
    a = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import torch
    if a.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA GPU here (--device cpu profiles the CPU ops)")
    out = []
    for ls in [int(x) for x in a.log_sizes.split(",")]:
        r = profile_one(a.group, ls, a.device, a.calls, a.prepared, a.weighted, a.mixed, a.point_major)
        out.append(r)
        label = (" weighted" if a.weighted else " prepared" if a.prepared else "") + (" mixed" if a.mixed else "") + \
            (" point-major" if a.point_major else "")
        print(f"{r['group']} {r['strategy']} 2^{ls}{label}: wall "
              f"{r['wall_ms_per_msm']:.2f} ms per MSM, {r['timed']} time {r['total_ms_per_msm']:.2f} ms "
              f"in {sum(k['count'] for k in r['kernels'])} {'kernels' if a.device == 'cuda' else 'ops'}",
              flush=True)
        for k in r["kernels"][:a.top]:
            print(f"  {k['us_per_msm'] / 1e3:9.3f} ms {100 * k['share']:5.1f}%  x{k['count']:<4d} {k['name'][:90]}")
        if a.json:                               # after every size: a run stopped at its limit keeps them
            Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
