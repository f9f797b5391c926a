"""An ESTIMATE, not a measurement: a lower bound on an H100's time for a BN254 G1 MSM from
SASS instruction counts, for when no GPU is lent.

    python bench/sass_report.py --fields bn254.fq --json sass.json     # per-multiplication SASS
    python -m bench.gpu_estimate sass.json                              # -> bench/results/gpu_estimate.md

Model (stated, crude): the MSM's work is its field multiplications, each costing the SASS
instructions of one compiled multiplication (`sass_report`'s per-mul mix, which holds its
additions, carries and selects); additions outside multiplications, memory traffic,
latency, occupancy and the host program are ignored, so the real time is higher. Issue
rate on an H100 SXM: 132 SMs at 1.98 GHz; each of an SM's four schedulers issues one warp
instruction a clock (128 lanes an SM) into pipes that run side by side: ALU (integer
arithmetic other than IMAD, logic, shifts, compares, selects, moves: 64 lanes an SM a
clock), FMA (IMAD: 64), FP64 (DFMA/DADD/DMUL: 64) and XU (conversions such as I2F, POPC: 16).
A multiplication's time is its busiest pipe's or the issue's, whichever is longer.
Operation count of a Pippenger
MSM of n points with c-bit signed windows (c = the device program's `device_window`):
n·ceil(bits/c) bucket additions plus 2 per bucket in the running-sum reduction, each an
XYZZ addition of 12 multiplications and 2 squarings (bases stored as XYZZ on the device).
A second bound, the critical path: the device program's longest chain of dependent point
steps (a lane's segment in each accumulation round, each reduction level's chain, the
window combination's additions and ~bits doublings of 9 multiplications), issued by one
warp at most one instruction a clock. Both for the program as `zt.msm` runs it on BN254 G1
bases: with the GLV split (`MSMConfig.glv`), 2n points and scalars of 126 bits, plus n
products for phi's x-coordinates.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

SMS, CLOCK = 132, 1.98e9
ISSUE = 128                      # lanes an SM a clock: four schedulers, one warp instruction each
PIPES = {"ALU": 64, "FMA": 64, "FP64": 64, "XU": 16}   # lanes an SM a clock (sm_90)
PIPE_OF = {"IMAD": "FMA", "DFMA": "FP64", "DADD": "FP64", "DMUL": "FP64", "DSETP": "FP64",
           "I2F": "XU", "F2I": "XU", "MUFU": "XU", "POPC": "XU", "FLO": "XU", "BREV": "XU"}
UNIFORM = ("U",)                 # the uniform datapath's instructions (UMOV, ...): issue only
MULS_PER_ADD = 14
MULS_PER_DOUBLE = 9     # dbl-2008-s-1 (the device program's doubling: one square and the addition's finish)


def pipe_cycles(mix: dict) -> dict:
    """SM clocks per multiplication and lane that each pipe, and the issue, need for `mix`
    (a per-mul difference: an opcode's count may be negative, the pipe's sum is not)."""
    busy = {name: 0 for name in PIPES}
    for op, n in mix.items():
        if not op.startswith(UNIFORM) and op != "NOP":
            busy[PIPE_OF.get(op, "ALU")] += n
    cycles = {name: max(n, 0) / PIPES[name] for name, n in busy.items()}
    cycles["issue"] = max(sum(mix.values()), 0) / ISSUE
    return cycles


def seconds_per_mul(mix: dict) -> float:
    """Issue-limited seconds of one multiplication per lane, across the whole GPU."""
    return max(pipe_cycles(mix).values()) / (SMS * CLOCK)


def msm_muls(n: int, c: int, bits: int = 254) -> int:
    windows = math.ceil((bits + 1) / c)
    buckets = windows * (1 << (c - 1))
    return MULS_PER_ADD * (n * windows + 2 * buckets)


def reduction_steps(levels: list[int]) -> tuple[int, int]:
    """(additions, doublings) along one lane of the device program's bucket reduction with
    these fan-ins (log2, `ops.msm.device.reduce_levels`): the first level's run over its m
    buckets is 2m trips, a later level's 2G - 1 trips and G additions of the blocks' a, the
    first two trips of each copies (their sums are still the identity); every level but
    the last scales its r by its fan-in (b doublings)."""
    adds = doubles = 0
    for i, b in enumerate(levels):
        G = 1 << b
        adds += (2 * G if i == 0 else 3 * G - 1) - 2
        doubles += b if i < len(levels) - 1 else 0
    return adds, doubles


def critical_path_muls(n: int, c: int, bits: int = 254) -> int:
    """Field multiplications along the device program's longest dependent chain (one lane)."""
    from zktensor.ops.msm.device import MSMConfig, layout, reduce_levels
    windows = math.ceil((bits + 1) / c)
    S = MSMConfig().segment
    adds = layout(n, 1, c, windows, S)["R"] * (S - 1)           # a lane's segment after its first entry, each round
    r_adds, doubles = reduction_steps(reduce_levels(c))
    adds += r_adds + windows - 1                                 # the combination: Horner, its first trip a copy
    doubles += (windows - 1) * c
    return MULS_PER_ADD * adds + MULS_PER_DOUBLE * doubles


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sass_json", help="bench/sass_report.py --json output (per_mul_sass of bn254.fq)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "gpu_estimate"))
    args = ap.parse_args(argv)
    reports = [r for r in json.loads(Path(args.sass_json).read_text()) if r.get("field") == "bn254.fq"]
    if not reports:
        ap.error(f"{args.sass_json}: no bn254.fq report")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from zktensor.algebra.glv import endomorphism
    from zktensor.ops.msm.device import device_window
    endo = endomorphism("bn254.g1")             # the device program's split (MSMConfig.glv, on)
    rows = []
    for r in reports:
        spm = seconds_per_mul(r["per_mul_sass"])
        per_mul = sum(r["per_mul_sass"].values())
        cycles = pipe_cycles(r["per_mul_sass"])
        limit = max(cycles, key=cycles.get)
        for log_n in (16, 18, 20, 22):
            points, bits = (2 << log_n, endo.bits) if endo else (1 << log_n, 254)
            c = device_window(points, bits)
            muls = msm_muls(points, c, bits) + (points - (1 << log_n))      # + beta·x of each phi(P)
            path = critical_path_muls(points, c, bits)
            rows.append({"strategy": r["strategy"], "arch": r["arch"], "log_n": log_n, "window": c,
                         "instructions_per_mul": per_mul, "limit": limit,
                         "sm_cycles_per_mul": {k: round(v, 3) for k, v in cycles.items()}, "field_muls": muls,
                         "estimate_lower_bound_ms": round(1e3 * muls * spm, 3),
                         "critical_path_muls": path, "critical_path_bound_ms": round(1e3 * path * per_mul / CLOCK, 3)})
    doc = {"what": "ESTIMATE from SASS instruction counts (issue-rate lower bound), not a measured time",
           "model": __doc__.split("\n\n")[2].replace("\n", " "), "rows": rows}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    lines = ["# ESTIMATE (not a measurement): BN254 G1 MSM on one H100 from SASS instruction counts", "",
             "Nothing here was timed: the bounds follow from ahead-of-time SASS counts. " + doc["model"], "",
             "Measured times on a GPU, for comparison, are in [gpu/](gpu/) (an H200: the same SM count and "
             "clock as the H100 SXM modelled here).", "",
             "| strategy | arch | points | window | SASS instr. / mul | busiest | field muls | issue-rate bound "
             "| muls on the critical path | critical-path bound |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['strategy']} | {r['arch']} | 2^{r['log_n']} | {r['window']} | {r['instructions_per_mul']} "
                     f"| {r['limit']} | {r['field_muls']:.3g} | {r['estimate_lower_bound_ms']} ms (estimate) "
                     f"| {r['critical_path_muls']} | {r['critical_path_bound_ms']} ms (estimate) |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
