"""An ESTIMATE, not a measurement: a lower bound on an H100's time for a BN254 G1 MSM from
SASS instruction counts, for when no GPU is lent.

    python bench/sass_report.py --fields bn254.fq --json sass.json     # per-multiplication SASS
    python -m bench.gpu_estimate sass.json                              # -> bench/results/gpu_estimate.md

Model (stated, crude): the MSM's work is its field multiplications, each costing the SASS
instructions of one compiled multiplication (`sass_report`'s per-mul mix, which holds its
additions, carries and selects); additions outside multiplications, memory traffic,
latency, occupancy and the host program are ignored, so the real time is higher. Issue
rate on an H100 SXM: 132 SMs at 1.98 GHz, 128 lanes an SM a clock for integer and
logic instructions, 64 for IMAD and for FP64 (DFMA/DADD). Operation count of a Pippenger
MSM of n points with c-bit signed windows: n·ceil(bits/c) bucket additions plus 2 per
bucket in the running-sum reduction, each an XYZZ addition of 12 multiplications and 2
squarings (bases stored as XYZZ on the device).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

SMS, CLOCK = 132, 1.98e9
FULL, HALF = 128, 64
HALF_RATE = ("IMAD", "DFMA", "DADD", "DMUL")
MULS_PER_ADD = 14


def seconds_per_mul(mix: dict) -> float:
    """Issue-limited seconds of one multiplication per lane, across the whole GPU."""
    half = sum(v for k, v in mix.items() if k in HALF_RATE)
    full = sum(v for k, v in mix.items() if k not in HALF_RATE)
    cycles_per_sm_lane = half / HALF + full / FULL        # SM clocks per multiplication, per lane
    return cycles_per_sm_lane / (SMS * CLOCK)


def msm_muls(n: int, c: int, bits: int = 254) -> int:
    windows = math.ceil((bits + 1) / c)
    buckets = windows * (1 << (c - 1))
    return MULS_PER_ADD * (n * windows + 2 * buckets)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sass_json", help="bench/sass_report.py --json output (per_mul_sass of bn254.fq)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "gpu_estimate"))
    args = ap.parse_args(argv)
    reports = [r for r in json.loads(Path(args.sass_json).read_text()) if r.get("field") == "bn254.fq"]
    if not reports:
        ap.error(f"{args.sass_json}: no bn254.fq report")
    rows = []
    for r in reports:
        spm = seconds_per_mul(r["per_mul_sass"])
        for log_n, c in ((16, 13), (18, 15), (20, 16), (22, 16)):
            muls = msm_muls(1 << log_n, c)
            rows.append({"strategy": r["strategy"], "arch": r["arch"], "log_n": log_n, "window": c,
                         "instructions_per_mul": sum(r["per_mul_sass"].values()), "field_muls": muls,
                         "estimate_lower_bound_ms": round(1e3 * muls * spm, 3)})
    doc = {"what": "ESTIMATE from SASS instruction counts (issue-rate lower bound), not a measured time",
           "model": __doc__.split("\n\n")[2].replace("\n", " "), "rows": rows}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    lines = ["# ESTIMATE (not a measurement): BN254 G1 MSM on one H100 from SASS instruction counts", "",
             "No GPU was lent; nothing here was timed. " + doc["model"], "",
             "| strategy | arch | points | window | SASS instr. / mul | field muls | estimated lower bound |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['strategy']} | {r['arch']} | 2^{r['log_n']} | {r['window']} | {r['instructions_per_mul']} "
                     f"| {r['field_muls']:.3g} | {r['estimate_lower_bound_ms']} ms (estimate) |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
