"""Registers and SASS instruction mix of the generated Triton field kernels (no GPU needed).

For each field x strategy x architecture it compiles `a * b` and `a * b * b`
ahead of time (Triton's bundled ptxas), and reports the registers, local
memory, and the instruction mix of the kernel and of one field multiplication
(the difference between the two kernels: loads, stores and indexing cancel).

    python bench/sass_report.py                     # all fields, int32 and fp64, sm_90a
    python bench/sass_report.py --fields bn254.fr --arch sm_80 --json out.json
    python bench/sass_report.py --proof-kernels --curve bn254 --json bench/results/sass_proof_kernels.json
    python bench/sass_report.py --proof-kernels --only msm_g1.acc --strategies fp64 --max-registers 0,168,128

`--proof-kernels`: every kernel a Groth16 proof on the curve launches on the Triton
target, per strategy: the field and point programs that `python -m zktensor.prebuild`
recorded for it (.zktensor-prebuilt/manifest.json), the device MSM's three kernels for G1
and G2 (constexprs of a 2^20 MSM) and the NTT pass kernels of a 2^16 transform. For each:
registers, estimated occupancy (registers only: warps resident on an SM of 64K registers
and 64 warps; shared memory not counted), the instruction mix, and the seconds Triton
took to compile it ahead of time (ptxas included) in a fresh process: the cold-cache
compile a first proof on a GPU waits for, measured on this machine's CPU (`--jobs`
processes at a time; the wall time is reported too). A kernel with a loop (the device
MSM's, the NTT's) also reports its main loop's trip as most lanes run it: the loop's
instructions less those a block-wide branch skips where no lane needs them
(`runtime.aot.loop_mix`: P = Q, an identity operand), spill instructions among them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FIELD_WARPS = 4         # runtime.aot's default, as the elementwise kernels launch
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
            "occupancy": round(occupancy(one["registers"], FIELD_WARPS), 3),
            "local_bytes": one["local_bytes"], "spills": one["spills"], "kernel_sass": one["sass"],
            "per_mul_sass": {k: v for k, v in per_mul.items() if v}}


def occupancy(registers: int, num_warps: int, regs_per_sm: int = 65536, max_warps: int = 64,
              max_blocks: int = 32) -> float:
    """Fraction of an SM's warp slots a kernel can fill, from its registers alone (sm_80/sm_90:
    registers are allocated per warp in units of 256, i.e. 8 a thread)."""
    per_warp = -(-registers // 8) * 8 * 32
    blocks = min(max_blocks, regs_per_sm // (per_warp * num_warps), max_warps // num_warps)
    return blocks * num_warps / max_warps


def proof_kernels(curve: str, strategy: str, manifest: dict) -> list:
    """(label, jit function, signature, constexprs, num_warps, coalesce, register cap) for each
    kernel of a proof (the cap: ptxas's .maxnreg as the kernel launches by default, None for none):
    the manifest's elementwise kernels (`kernel_N`) and point tile kernels (`msm_triton`'s
    `point_kernel`, at its BLOCK and warps), the device MSM's kernels for G1 and G2 (every
    size a runtime argument: one compile each serves every MSM) and the NTT's passes."""
    import zktensor as zt
    from zktensor.kernels import msm_device, msm_triton, ntt_triton
    from zktensor.ops.msm import MSMConfig, device
    from zktensor.ops.ntt import DEFAULT_CONFIG
    from zktensor.runtime import cache
    from zktensor.runtime.aot import elementwise_signature
    from zktensor.runtime.triton_modules import load_triton_module
    out = []
    for key, e in sorted(manifest["entries"].items()):
        if not isinstance(e, dict):
            continue
        if not any(t.startswith(f"{strategy} {curve} ") or t.startswith(f"{strategy} proof") for t in e["used_by"]):
            continue
        entry = cache.lookup(key)
        if entry is None:
            continue
        if e.get("kind") == "msm_triton":                  # a point program's tile kernel
            kernels, block, warps = e["kernels"], msm_triton.BLOCK, msm_triton.num_warps(msm_triton.BLOCK)
        elif e["kernels"] and all(k.startswith("kernel_") for k in e["kernels"]):
            kernels, block, warps = e["kernels"], 128, 4
        else:                                               # the device MSM and the NTT: below
            continue
        mod = load_triton_module(str(entry / "kernels.py"), interpret=False)
        for k in kernels:
            fn = getattr(mod, k)
            sig, const = elementwise_signature(fn.arg_names, block=block)
            out.append((f"{key[:8]}.{k}", fn, sig, const, warps, False, None))
    block = MSMConfig().block
    from zktensor.algebra.curves import GROUP_NAMES
    for g in (g for g in ("g1", "g2") if f"{curve}.{g}" in GROUP_NAMES):      # MNT4-753: G1 only
        G = zt.group(f"{curve}.{g}")
        mod = msm_device.module(G, strategy, "cuda", interpret=False)
        for k in msm_device.KERNELS:
            fn = getattr(mod, k)
            sig, const = msm_device.aot_signature(fn, block)
            out.append((f"msm_{g}.{k}", fn, sig, const, msm_triton.num_warps(block), False,
                        device.register_cap(G, MSMConfig())))
    F = zt.field(f"{curve}.fr")
    mod = ntt_triton.module(F.params, strategy, interpret=False)
    seen = set()
    for dit, pre, post in ((False, 1, 0), (True, 0, 2), (True, 0, 1), (False, 0, 0)):
        passes = ntt_triton.schedule(16, 3 << 16, dit, DEFAULT_CONFIG)
        for i, p in enumerate(passes):
            c = dict(R=1 << p.log_r, LOG_R=p.log_r, C=p.C, Q=p.Q, DIT=dit, PRE=pre if i == 0 else 0,
                     POST=post if i == len(passes) - 1 else 0)
            if tuple(c.items()) in seen:
                continue
            seen.add(tuple(c.items()))
            sig = dict(ntt_triton.SIGNATURE, **{k: "constexpr" for k in c})
            out.append((f"ntt_pass.{'dit' if dit else 'dif'}.r{p.log_r}c{p.C}q{p.Q}p{c['PRE']}{c['POST']}",
                        mod.ntt_pass, sig, c, DEFAULT_CONFIG.num_warps, True, None))
    return out


def proof_report(curve: str, strategies, arch: str, jobs: int, only: str | None = None,
                 max_registers=(None,)) -> list:
    """Compile every kernel of `proof_kernels` (those whose label contains `only`, if given)
    in a fresh process with an empty Triton cache, so that every figure is a cold compile.
    With jobs = 1 the compiling process's CPU seconds (its children's rusage) are exact and
    reported as cpu_s; the wall seconds of a loaded machine are not a compile time.
    `max_registers`: the device MSM's kernels once for each cap (`MSMConfig.max_registers`;
    None: as they launch by default, `ops.msm.device.register_cap`), labelled `kernel@cap`;
    the other kernels uncapped. A row's max_registers is the cap it was compiled with."""
    import concurrent.futures
    import os
    import resource
    import tempfile
    import time
    from zktensor.runtime import aot, cache
    path = cache.prebuilt_root() / "manifest.json"
    if path.exists():
        manifest = json.loads(path.read_text())
    else:
        print(f"sass_report: {path} not found (python -m zktensor.prebuild): the MSM and NTT kernels only",
              flush=True)
        manifest = {"entries": {}}
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="sass_report_triton_")      # cold: nothing cached
    rows = []
    for strategy in strategies:
        kernels = [k + (cap,) for k in proof_kernels(curve, strategy, manifest) if only is None or only in k[0]
                   for cap in (max_registers if k[0].startswith("msm_") else (None,))]
        t0 = time.perf_counter()

        def one(k):
            label, fn, sig, const, warps, coalesce, default_cap, cap = k
            label += f"@{cap}" if cap else ""
            cap = cap or default_cap
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            r = aot.compile_kernel(fn, arch, sig, const, warps, coalesce=coalesce, maxnreg=cap)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            return dict(kernel=label, strategy=strategy, arch=arch, num_warps=warps, max_registers=cap,
                        registers=r["registers"],
                        local_bytes=r["local_bytes"], stack_bytes=r.get("stack_bytes"), spills=r["spills"],
                        functions=r.get("functions"),
                        spill_instructions=r["sass"].get("STL", 0) + r["sass"].get("LDL", 0), seconds=r["seconds"],
                        cpu_s=round(cpu, 2) if jobs == 1 else None,
                        occupancy=round(occupancy(r["registers"], warps), 3), sass=r["sass"],
                        instructions=sum(r["sass"].values()), loop=r.get("loop"))
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            for row in pool.map(one, kernels):
                rows.append(row)
                mix = " ".join(f"{k}:{row['sass'].get(k, 0)}" for k in SHOWN if row["sass"].get(k))
                cpu = f"{row['cpu_s']:7.2f}" if row["cpu_s"] is not None else "      -"
                print(f"{strategy:6s} {row['kernel']:34s} regs {row['registers']:3d} occ {row['occupancy']:.2f} "
                      f"warps {row['num_warps']} spill {row['spill_instructions']:5d} cpu {cpu} s "
                      f"wall {row['seconds']:7.2f} s  instr {row['instructions']:6d}  {mix}{_loop_text(row['loop'])}",
                      flush=True)
        wall = time.perf_counter() - t0
        mine = [r for r in rows if r.get("strategy") == strategy and "kernel" in r]
        cpu_sum = sum(r["cpu_s"] for r in mine) if jobs == 1 else None
        print(f"{strategy}: {len(mine)} kernels, compile {sum(r['seconds'] for r in mine):.1f} s wall summed over "
              f"kernels" + (f", {cpu_sum:.1f} s CPU summed" if cpu_sum is not None else "") +
              f", {wall:.1f} s wall with {jobs} at a time", flush=True)
        rows.append({"summary": strategy, "kernels": len(mine), "compile_s_sum": round(sum(r["seconds"] for r in mine), 2),
                     "cpu_s_sum": round(cpu_sum, 2) if cpu_sum is not None else None,
                     "wall_s": round(wall, 2), "jobs": jobs})
    return rows


def _loop_text(loop: dict | None) -> str:
    """The main loop's trip as most lanes run it (`runtime.aot.loop_mix`): its instructions
    and spill instructions, less the rare branches'."""
    if not loop:
        return ""
    hot = loop["hot"]
    return (f"  loop: {sum(hot.values())} hot of {loop['loop']} (spill {hot.get('STL', 0) + hot.get('LDL', 0)}, "
            f"SEL {hot.get('SEL', 0)})")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        return ""


def main(argv=None):
    from zktensor.algebra import FIELD_NAMES
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fields", default=",".join(FIELD_NAMES))
    ap.add_argument("--strategies", default="int32,fp64")
    ap.add_argument("--arch", default="sm_90a", choices=["sm_90a", "sm_80"])
    ap.add_argument("--json", default=None, help="also write the reports to this file")
    ap.add_argument("--proof-kernels", action="store_true", help="every kernel of a Groth16 proof (see above)")
    ap.add_argument("--curve", default="bn254")
    ap.add_argument("--jobs", type=int, default=2, help="--proof-kernels: compiles at a time (1: CPU seconds exact)")
    ap.add_argument("--only", default=None, help="--proof-kernels: only kernels whose label contains this")
    ap.add_argument("--max-registers", default="",
                    help="--proof-kernels: register caps for the device MSM's kernels, comma-separated "
                         "(0: as launched by default; MSMConfig.max_registers), each compiled once per cap")
    ap.add_argument("--note", default=None, help="--proof-kernels: a note stored with the JSON (the machine's state)")
    args = ap.parse_args(argv)
    if args.proof_kernels:
        caps = tuple(int(c) or None for c in args.max_registers.split(",")) if args.max_registers else (None,)
        rows = proof_report(args.curve, args.strategies.split(","), args.arch, args.jobs, args.only, caps)
        if args.json:
            import time
            import triton
            doc = {"created": time.strftime("%Y-%m-%dT%H:%M:%S"), "triton": triton.__version__, "arch": args.arch,
                   "curve": args.curve, "jobs": args.jobs, "cpus": os.cpu_count(), "cpu_model": _cpu_model(),
                   "load_average": os.getloadavg(), "note": args.note, "rows": rows}
            Path(args.json).write_text(json.dumps(doc, indent=1))
        return
    reports = []
    print(f"{'field':14s} {'strategy':8s} {'regs':>4s} {'occ':>4s} {'spill':>5s}  per field multiplication: "
          + " ".join(f"{k:>6s}" for k in SHOWN))
    for name in args.fields.split(","):
        for st in args.strategies.split(","):
            r = report(name, st, args.arch)
            reports.append(r)
            mix = " ".join(f"{r['per_mul_sass'].get(k, 0):6d}" for k in SHOWN)
            total = sum(r["per_mul_sass"].values())
            print(f"{name:14s} {st:8s} {r['registers']:4d} {r['occupancy']:4.2f} {str(r['spills']):>5s}  {mix}  "
                  f"(total {total})",
                  flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=1))


if __name__ == "__main__":
    main()
