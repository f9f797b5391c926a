"""Field multiplications per second: every field x strategy x target, with peers in the same run.

Measures `c = a * b` over arrays (the compiled elementwise kernel writing into
a preallocated output, as gnark-crypto's `a[i].Mul(&a[i], &b[i])` loop and
arkworks's array multiply do), one thread unless `--threads` says otherwise,
then runs gnark-crypto's and arkworks's `mul` programs in the same run and
writes `bench/results/field.json` with the ratios in each row's `extra`.

    python bench/field.py                       # CPU, all fields, all strategies, peers
    python bench/field.py --fields bn254.fr --strategies fp64 --no-peers
    python bench/field.py --target triton       # on a CUDA machine: Triton kernels
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import cuda_sync, machine_info, row_from_timing, time_runs, write_results  # noqa: E402


def measure(name: str, strategy: str, target: str, size: int, threads: int, device: str, runs: int):
    import torch

    import zktensor as zt
    from zktensor.ops.elementwise import apply

    os.environ["ZKTENSOR_NUM_THREADS"] = str(threads)
    F = zt.field(name)
    g = torch.Generator().manual_seed(1)
    a, b = F.random(size, generator=g).to(device), F.random(size, generator=g).to(device)
    c = F.zeros(size, device=device)
    with zt.config(strategy=strategy, target=target):
        apply("mul", a, b, out=c)                       # compile (or load) outside the timing
        check = (a[:4] * b[:4]).to_ints()
        want = [x * y % F.p for x, y in zip(a[:4].to_ints(), b[:4].to_ints())]
        if check != want:
            raise AssertionError(f"{name} {strategy}/{target}: wrong products")
        timing = time_runs(lambda: apply("mul", a, b, out=c), runs=runs,
                           sync=cuda_sync if device == "cuda" else None)
    return row_from_timing("zktensor", "mul_array", name, size, threads, timing,
                           strategy=strategy, target="cuda-triton" if device == "cuda" else target,
                           version=zt.__version__)


def peer_rows(threads: int):
    from bench.peers import run_peer
    rows = []
    for peer in ("gnark", "arkworks"):
        try:
            rows += [r.to_row() for r in run_peer(peer, "mul", threads=1, wait_quiet_s=120)]
        except Exception as e:  # noqa: BLE001 - a missing toolchain must not lose our figures
            print(f"[field] {peer} not measured: {e}", file=sys.stderr)
    return rows


def main(argv=None):
    from zktensor.algebra import FIELD_NAMES
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fields", default=",".join(FIELD_NAMES))
    ap.add_argument("--strategies", default=None, help="default: int64,int32,fp64 (cpu); int32,fp64 (triton)")
    ap.add_argument("--target", default=None, choices=["cpu", "triton"])
    ap.add_argument("--size", type=int, default=1 << 20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--name", default="field")
    args = ap.parse_args(argv)
    import torch
    device = "cuda" if torch.cuda.is_available() and args.target != "cpu" else "cpu"
    target = args.target or ("triton" if device == "cuda" else "cpu")
    if target == "triton" and device != "cuda":
        ap.error("--target triton needs a CUDA GPU (the interpreter is a test tool, not a benchmark)")
    strategies = (args.strategies or ("int64,int32,fp64" if target == "cpu" else "int32,fp64")).split(",")
    rows = []
    for name in args.fields.split(","):
        size = args.size if "mnt4753" not in name else args.size // 4
        for st in strategies:
            row = measure(name, st, target, size, args.threads, device, args.runs)
            print(f"{name:14s} {st:6s} {target:7s} {row['unit_value'] / 1e6:8.1f} M mul/s  ({row['extra']})",
                  flush=True)
            rows.append(row)
    peers = [] if args.no_peers else peer_rows(args.threads)
    rows += peers
    _ratios(rows)
    path = write_results(args.name, rows, machine_info(),
                         notes="zktensor mul_array: c = a*b into a preallocated tensor; peers' mul programs "
                               "(fr/fq_mul_array, fr_mul_vector) measured in the same run")
    print(f"wrote {path}")


def _ratios(rows):
    """Add 'x gnark' / 'x arkworks' to our BN254 rows (peers measure BN254 Fr and Fq)."""
    best = {}
    for r in rows:
        if r["system"] == "zktensor":
            continue
        field = "fr" if r["op"].startswith("fr_") else "fq"
        key = (r["system"], f"bn254.{field}")
        best[key] = max(best.get(key, 0), r["unit_value"] or 0)
    for r in rows:
        if r["system"] != "zktensor" or not r["field_or_curve"].startswith("bn254"):
            continue
        notes = [f"{r['unit_value'] / v:.2f}x {sys_}" for (sys_, f), v in sorted(best.items())
                 if f == r["field_or_curve"] and v]
        if notes:
            r["extra"] = f"{r['extra']}; " + ", ".join(notes)


if __name__ == "__main__":
    main()
