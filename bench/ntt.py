"""NTT benchmark: zt.ntt / zt.intt against gnark-crypto and arkworks, same machine, same run.

    python -m bench.ntt                                  # BN254 Fr 2^10..2^22 on the CPU, 2 threads, peers too
    python -m bench.ntt --log-sizes 16,20 --no-peers     # peers from bench/results/peers.json instead
    python -m bench.ntt --fields bn254.fr,bls12_381.fr --log-sizes 12,16
    python -m bench.ntt --device cuda                    # Triton kernels on a GPU (rows go to results/gpu/)
    python -m bench.ntt --device cuda --max-registers 128   # the pass kernels under a register cap
    python -m bench.ntt --aot                            # compile the Triton pass kernels for sm_90a (no GPU
                                                         # needed): registers, spills, SASS mix -> ntt_aot.json
    python -m bench.ntt --aot --max-registers 128        # the same under a register cap -> ntt_aot_maxnreg128.json

Ops (elements/s = N / median time; one polynomial per call, like the peers):
  fr_fft          natural order in and out   (gnark: DIF + BitReverse; arkworks: fft_in_place)
  fr_fft_dif      natural in, bit-reversed out (gnark: Domain.FFT(DIF))
  fr_fft_inverse  zt.intt, natural order      (compared with the peers' forward FFT)
  fr_fft_coset    zt.ntt(x, coset=g)          (compared with the peers' forward FFT)
  h_pair          the prover's POLY pair on 3 polynomials (a, b, c): inverse NTT to
                  bit-reversed coefficients, coset NTT from them (`r1cs_to_qap`); no peer
  h_pair_natural  the same pair through natural-order coefficients (the prover's before
                  2026-11-29): the A/B of the bit-reversed hand-over; no peer

Timing: `bench.common.time_runs` (a warm-up call absorbs kernel compilation
and twiddle tables; runs during which other processes used more than 3% of
the cores are discarded and repeated), after `bench.peers.wait_for_quiet`.
Calls write into a preallocated `out=` tensor, as the peers transform in
place. `--peers` (default) runs gnark-crypto's and arkworks's FFT programs in
the same invocation. Ratios are zktensor's median time over the peer's for
the same size and thread count (below 1: zktensor faster).
Results: bench/results/ntt.json and .csv (bench/results/gpu/ on a GPU machine).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

try:
    from bench.common import default_results_dir, make_row, time_runs, write_results
except ImportError:  # python bench/ntt.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.common import default_results_dir, make_row, time_runs, write_results

PEER_CURVE = {"bn254": "bn254", "bls12_381": "bls12-381", "mnt4753": "mnt4-753"}
OPS = ("fr_fft", "fr_fft_dif", "fr_fft_inverse", "fr_fft_coset")
PAIR_OPS = ("h_pair", "h_pair_natural")
# which peer op each of ours is compared with
PEER_OP = {"fr_fft": {"gnark-crypto": "fr_fft_dif_bitrev", "arkworks": "fr_fft_in_place"},
           "fr_fft_dif": {"gnark-crypto": "fr_fft_dif"},
           "fr_fft_inverse": {"gnark-crypto": "fr_fft_dif_bitrev", "arkworks": "fr_fft_in_place"},
           "fr_fft_coset": {"gnark-crypto": "fr_fft_dif_bitrev", "arkworks": "fr_fft_in_place"},
           "h_pair": {}, "h_pair_natural": {}}


def peer_rows(run_peers: bool, threads: int, quiet_wait: float) -> tuple[list[dict], str]:
    from bench import peers
    if run_peers:
        rows = []
        for p in ("gnark", "arkworks"):
            rows += [r.to_row() for r in peers.run_peer(p, "fft", threads, wait_quiet_s=quiet_wait or None)]
        return rows, "measured in this run"
    path = default_results_dir() / "peers.json"
    if not path.exists():
        return [], "no peer results (run with --peers)"
    doc = json.loads(path.read_text())
    rows = [r for r in doc["rows"] if r["op"].startswith("fr_fft")]
    return rows, f"from {path.name} ({doc.get('created', '?')}), not this run"


def measure(field: str, log_n: int, op: str, device: str, threads: int, runs: int, max_registers=None):
    import torch
    import zktensor as zt
    F = zt.field(field)
    n = 1 << log_n
    kw = {} if max_registers is None else {"max_registers": max_registers}     # over the resolved config
    gen = torch.Generator().manual_seed(log_n)
    if op in PAIR_OPS:          # a, b and c, as the prover transforms them
        from zktensor.groth16.r1cs_to_qap import coefficients, coset_evaluations, coset_shift
        x, g = F.random((3, n), gen, device=device), coset_shift(F, n)
        call = {"h_pair": lambda: coset_evaluations(coefficients(x, **kw), g, **kw),
                "h_pair_natural": lambda: zt.ntt(zt.intt(x, **kw), coset=g, **kw)}[op]
        return _timed(call, log_n, device, runs)
    x, out, g = F.random((n,), gen, device=device), F.zeros((n,), device=device), F.nqr
    call = {"fr_fft": lambda: zt.ntt(x, out=out, **kw),
            "fr_fft_dif": lambda: zt.ntt(x, output_order="bitrev", out=out, **kw),
            "fr_fft_inverse": lambda: zt.intt(x, out=out, **kw),
            "fr_fft_coset": lambda: zt.ntt(x, coset=g, out=out, **kw)}[op]
    return _timed(call, log_n, device, runs)


def _timed(call, log_n: int, device: str, runs: int):
    import torch
    sync = torch.cuda.synchronize if device == "cuda" else None
    number = max(1, (1 << 17) >> log_n) if device != "cuda" else max(1, (1 << 20) >> log_n)
    call()                                   # compile, tables
    return time_runs(call, runs=runs, number=number, sync=sync)


AOT_CASES = [
    # (field, strategy, log_r, C, Q, dit, pre, post): the default config's tiles and the epilogue variants
    ("bn254.fr", "int32", 3, 32, 1, False, 0, 0),
    ("bn254.fr", "int32", 3, 32, 1, False, 1, 0),
    ("bn254.fr", "int32", 3, 4, 8, True, 0, 1),
    ("bn254.fr", "fp64", 2, 32, 1, False, 1, 0),
    ("bls12_381.fr", "int32", 2, 32, 1, True, 0, 2),
    ("mnt4753.fr", "int32", 1, 32, 1, False, 0, 0),
]


def pair_cases(log_n: int = 20, strategy: str = "fp64") -> list[tuple]:
    """AOT cases of the prover's POLY pair on 3 polynomials of 2^log_n (`h_pair`), as the
    default config schedules it: the inverse DIF's passes (N^-1, a constant, on the last)
    and the coset DIT's (the coset table on the first), each distinct kernel once."""
    from zktensor.kernels.ntt_triton import schedule
    from zktensor.ops.ntt import DEFAULT_CONFIG
    cases = []
    for dit, pre, post in ((False, 0, 2), (True, 1, 0)):
        passes = schedule(log_n, 3 << log_n, dit, DEFAULT_CONFIG)
        for i, p in enumerate(passes):
            case = ("bn254.fr", strategy, p.log_r, p.C, p.Q, dit, pre if i == 0 else 0,
                    post if i == len(passes) - 1 else 0)
            if case not in cases:
                cases.append(case)
    return cases


def aot_report(arch: str, maxnreg: int | None = None) -> int:
    """Compile the pass kernel ahead of time for `arch` (under ptxas's register cap
    `maxnreg`, where given): AOT_CASES and the prover's pair at 2^20 (`pair_cases`); write
    registers, local memory, spills and the SASS opcode mix per case to
    results/ntt_aot.json (ntt_aot_maxnreg<cap>.json)."""
    import time
    import zktensor as zt
    from zktensor.kernels import ntt_triton
    out = []
    for name, strategy, log_r, C, Q, dit, pre, post in AOT_CASES + pair_cases(20):
        t0 = time.perf_counter()
        rep = ntt_triton.aot_compile(zt.field(name).params, strategy, arch, 4, log_r=log_r, C=C, Q=Q, dit=dit,
                                     pre=pre, post=post, maxnreg=maxnreg)
        rep.update(field=name, strategy=strategy, R=1 << log_r, C=C, Q=Q, dit=dit, pre=pre, post=post,
                   compile_s=round(time.perf_counter() - t0, 1))
        top = sorted(rep["sass"].items(), key=lambda kv: -kv[1])[:6]
        print(f"{name:13s} {strategy:5s} R={1 << log_r:<2d} C={C:<2d} Q={Q} {'DIT' if dit else 'DIF'} pre={pre} "
              f"post={post}: {rep['registers']} regs, local {rep['local_bytes']} B, spills {rep['spills']}, "
              f"{rep['compile_s']} s; {top}", flush=True)
        out.append(rep)
    path = default_results_dir() / ("ntt_aot.json" if maxnreg is None else f"ntt_aot_maxnreg{maxnreg}.json")
    path.write_text(json.dumps({"arch": arch, "kernel": "zktensor.kernels.ntt_triton.ntt_pass", "num_warps": 4,
                                "maxnreg": maxnreg,
                                "note": "compile_s is wall time on this machine, including hits of Triton's own "
                                        "cache (~/.triton/cache): a cold compile of the 8-row int32 tiles takes "
                                        "30-90 s here",
                                "cases": out}, indent=1) + "\n")
    print(f"saved {path}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fields", default="bn254.fr")
    ap.add_argument("--log-sizes", default="10,12,14,16,18,20,22")
    ap.add_argument("--ops", default=",".join(OPS), help=f"of {', '.join(OPS + PAIR_OPS)}")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--no-peers", action="store_true", help="take peer rows from bench/results/peers.json")
    ap.add_argument("--quiet-wait", type=float, default=120.0,
                    help="at most this many seconds to wait for other processes to go quiet before the peers "
                         "and before each size (a tenth of it for sizes after the first)")
    ap.add_argument("--max-registers", type=int, default=None,
                    help="Triton: ptxas's register cap for the pass kernels (NTTConfig.max_registers)")
    ap.add_argument("--aot", action="store_true", help="AOT-compile the Triton kernels instead of timing")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--save", default="ntt")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    unknown = [op for op in args.ops.split(",") if op not in OPS + PAIR_OPS]
    if unknown:
        ap.error(f"--ops: unknown {', '.join(unknown)} (known: {', '.join(OPS + PAIR_OPS)})")
    if args.aot:
        return aot_report(args.arch, args.max_registers)
    if args.max_registers is not None and args.device != "cuda":
        ap.error("--max-registers: a cap for the Triton kernels, with --device cuda (or --aot)")

    os.environ["ZKTENSOR_NUM_THREADS"] = str(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    from bench import peers as peers_mod
    import zktensor as zt
    from zktensor.runtime.target import choose

    prows, peer_note = peer_rows(not args.no_peers, args.threads, args.quiet_wait)
    target = "cpu" if args.device == "cpu" else "cuda-triton"
    rows, lines = [], []

    def save(rows):
        if not args.no_save:
            return write_results(args.save, rows + [dict(p) for p in prows],
                                 notes=f"zt.ntt vs peers; peers {peer_note}; threads={args.threads}; "
                                       "ratio = zktensor median / peer median (below 1: zktensor faster)")

    for field in args.fields.split(","):
        curve = PEER_CURVE[field.split(".")[0]]
        for ls in [int(v) for v in args.log_sizes.split(",")]:
            if ls > zt.field(field).two_adicity:
                continue
            if args.quiet_wait:
                first = not rows
                peers_mod.wait_for_quiet(max_wait_s=args.quiet_wait if first else args.quiet_wait / 10, echo=False)
            for op in args.ops.split(","):
                t = measure(field, ls, op, args.device, args.threads, args.runs, args.max_registers)
                n = 1 << ls
                ratios = {}
                for system, pop in PEER_OP[op].items():
                    ref = [p for p in prows if p["system"] == system and p["op"] == pop
                           and p["field_or_curve"] == curve and int(p["size"]) == n
                           and int(p["threads"]) == args.threads]
                    if ref:
                        ratios[system] = t.median_s / min(r["median_s"] for r in ref)
                extra = {"clean": f"{t.clean}/{t.tried}", "ratio_to_peer": ratios, "peers": peer_note,
                         "max_registers": args.max_registers,
                         "peer_ops": PEER_OP[op], "min_ms": round(t.min_s * 1e3, 4)}
                strategy = "fp64-ifma" if args.device == "cpu" else choose("cuda")[0]
                rows.append(make_row("zktensor", op, curve, n, args.threads, t.median_s, t.min_s,
                                     strategy=strategy, target=target, runs=t.clean, version=zt.__version__,
                                     extra=extra))
                ratio_txt = "  ".join(f"{s}: {v:.2f}x" for s, v in ratios.items())
                line = (f"{field:13s} 2^{ls:<3d} {op:15s} {t.median_s * 1e3:10.3f} ms "
                        f"({n / t.median_s / 1e6:7.2f} M elem/s, clean {t.clean}/{t.tried})  {ratio_txt}")
                print(line, flush=True)
                lines.append(line)
                save(rows)              # after every row: a run stopped at its time limit keeps its rows
    if not args.no_save:
        print(f"saved {save(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
