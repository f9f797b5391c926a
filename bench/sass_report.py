"""Registers and SASS instruction mix of the generated Triton field kernels (no GPU needed).

For each field x strategy x architecture it compiles `a * b` and `a * b * b`
ahead of time (Triton's bundled ptxas), and reports the registers, local
memory, and the instruction mix of the kernel and of one field multiplication
(the difference between the two kernels: loads, stores and indexing cancel).

    python bench/sass_report.py                     # all fields, int32 and fp64, sm_90a
    python bench/sass_report.py --fields bn254.fr --arch sm_80 --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SHOWN = ("IMAD", "IADD3", "ISETP", "SEL", "LOP3", "SHF", "DFMA", "DADD", "I2F", "F2I", "MOV", "LDG", "STG")


def report(name: str, strategy: str, arch: str) -> dict:
    import zktensor as zt
    from zktensor.ir.program import trace
    from zktensor.runtime.aot import compile_program_kernels
    from zktensor.kernels.elementwise import get_program

    F = zt.field(name)
    one = compile_program_kernels(get_program(trace(lambda a, b: a * b, F.params, 2), strategy, "triton"),
                                  arch)["kernel_0"]
    two = compile_program_kernels(get_program(trace(lambda a, b: a * b * b, F.params, 2), strategy,
                                              "triton"), arch)["kernel_0"]
    per_mul = {k: two["sass"].get(k, 0) - one["sass"].get(k, 0) for k in set(one["sass"]) | set(two["sass"])}
    return {"field": name, "strategy": strategy, "arch": arch, "registers": one["registers"],
            "local_bytes": one["local_bytes"], "spills": one["spills"], "kernel_sass": one["sass"],
            "per_mul_sass": {k: v for k, v in per_mul.items() if v}}


def main(argv=None):
    from zktensor.algebra import FIELD_NAMES
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fields", default=",".join(FIELD_NAMES))
    ap.add_argument("--strategies", default="int32,fp64")
    ap.add_argument("--arch", default="sm_90a", choices=["sm_90a", "sm_80"])
    ap.add_argument("--json", default=None, help="also write the reports to this file")
    args = ap.parse_args(argv)
    reports = []
    print(f"{'field':14s} {'strategy':8s} {'regs':>4s} {'spill':>5s}  per field multiplication: "
          + " ".join(f"{k:>6s}" for k in SHOWN))
    for name in args.fields.split(","):
        for st in args.strategies.split(","):
            r = report(name, st, args.arch)
            reports.append(r)
            mix = " ".join(f"{r['per_mul_sass'].get(k, 0):6d}" for k in SHOWN)
            total = sum(r["per_mul_sass"].values())
            print(f"{name:14s} {st:8s} {r['registers']:4d} {str(r['spills']):>5s}  {mix}  (total {total})",
                  flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1))


if __name__ == "__main__":
    main()
