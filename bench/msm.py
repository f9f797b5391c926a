"""MSM benchmark: zktensor's `zt.msm` against gnark-crypto and arkworks, same machine, same run.

    python -m bench.msm                                   # BN254 G1 2^10..2^20 dense + sparse, 2 threads
    python -m bench.msm --curves bn254.g1,bls12_381.g1 --log-sizes 16,18 --threads 2 --peers
    python -m bench.msm --log-sizes 16 --prepared         # also GZKP prepared bases (precompute timed apart)
    python -m bench.msm --no-save --runs 3
    python -m bench.msm --device cuda --curves bn254.g1,bn254.g2 --log-sizes 16,18,20   # Triton on a GPU
    python -m bench.msm --device cuda --log-sizes 16,20 --weighted     # and on weighted tables (MSMConfig.weighted)
    python -m bench.msm --device cuda --log-sizes 16,20 --weighted --mixed   # and each on affine bases (MSMConfig.mixed)
    python -m bench.msm --device cuda --log-sizes 20 --layouts word,point     # each also point-major (MSMConfig.point_major)

Each (group, size, scalar kind) is measured in a fresh subprocess so that its
peak memory (VmHWM of that process, with the baseline of an idle process
subtracted) belongs to it alone. Scalars: `dense` uniform in [0, r); `sparse`
90% zeros and ones (45% each, as in witness MSMs) and 10% uniform. Bases: 2^k
distinct subgroup points (sums Q_i + R_j of random multiples of the generator;
how they were made does not matter to the MSM).

Timing: `bench.common.time_runs` (one warm-up call, which also absorbs kernel
compilation and the per-process bucket offsets, then `--runs` clean runs).
`--peers` runs gnark-crypto's and arkworks's MSM programs (`bench.peers`) in
the same invocation; otherwise the newest peer rows in bench/results/peers.json
are used and the report says so. Ratios are zktensor's median time over the
peer's for the same curve, size and thread count (below 1: zktensor faster).
`--device cuda` runs the Triton target's device program on a GPU (scalars and bases made
on the host, moved once, outside the timing; every timed call ends with a device
synchronisation) and records its launches and host synchronisations per call
(`zktensor.runtime.counters`). Results: bench/results/msm.json and .csv
(bench/results/gpu/ on a GPU machine).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

try:
    from bench.common import REPO_ROOT, default_results_dir, time_runs, \
        write_results, make_row
except ImportError:  # python bench/msm.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.common import REPO_ROOT, default_results_dir, time_runs, \
        write_results, make_row

PEER_CURVE = {"bn254": "bn254", "bls12_381": "bls12-381", "mnt4753": "mnt4-753"}


def _vm_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def make_bases(G, n: int, seed: int = 1, device="cpu"):
    """n distinct points: all sums Q_i + R_j of two small random sets, as affine XYZZ data,
    made on `device` (a GPU machine has no CPU kernels to make them with)."""
    import torch
    gen = torch.Generator().manual_seed(seed)
    a = min(n, 256)
    b = -(-n // a)
    Q = G.random(a, generator=gen, device=device)
    R = G.random(b, generator=gen, device=device)
    P = (Q.reshape(1, a) + R.reshape(b, 1)).reshape(-1)[:n]
    xy, inf = P.affine()
    return G.from_affine(xy, inf, check=False)


def make_scalars(G, n: int, kind: str, seed: int = 2):
    import torch
    gen = torch.Generator().manual_seed(seed)
    k = G.Fr.random(n, generator=gen)
    if kind == "sparse":
        u = torch.rand(n, generator=gen)
        zero, one = u < 0.45, (u >= 0.45) & (u < 0.9)
        k.data[:, zero] = 0
        k.data[:, one] = G.Fr.ones(1).data
    return k


def one(args) -> dict:
    """Measure one configuration in this process; returns a JSON-able dict."""
    os.environ["ZKTENSOR_NUM_THREADS"] = str(args.threads)
    import torch
    torch.set_num_threads(args.threads)
    import zktensor as zt
    base_rss = _vm_kib("VmRSS")
    G = zt.group(args.group)
    n = 1 << args.log_size
    t0 = time.perf_counter()
    P = make_bases(G, n, device=args.device)
    k = make_scalars(G, n, args.kind).to(args.device)
    setup_s = time.perf_counter() - t0
    sync = torch.cuda.synchronize if args.device == "cuda" else None
    cfg = zt.MSMConfig(window=args.window, weighted=args.weighted, mixed=args.mixed, point_major=args.point_major,
                       segment=args.segment or zt.MSMConfig.segment, max_registers=args.max_registers,
                       balanced=not args.unbalanced, glv=not args.no_glv)
    from zktensor.runtime.target import choose
    out = {"group": args.group, "n": n, "kind": args.kind, "threads": args.threads, "setup_s": setup_s,
           "device": args.device, "arith": choose(args.device)[0]}
    stats = {}
    if args.prepared or args.weighted or args.mixed:
        t0 = time.perf_counter()
        bases = zt.msm_prepare(P, window=args.window, checkpoint=args.checkpoint,
                               config=cfg if args.mixed or args.point_major or args.weighted else None)
        if args.weighted:                        # the device program's weighted table, made once
            from zktensor.ops.msm.device import device_window
            bases.device_weighted(args.window or device_window(n, G.r.bit_length()))
            if sync:
                sync()
        out["prepare_s"] = time.perf_counter() - t0
        out["prepared_bytes"] = bases.memory_bytes()
        target = bases
    else:
        target = P
    zt.msm(k, target, cfg)                       # compiles, and draws the bucket offsets
    from zktensor.runtime import counters
    with counters.record() as calls:
        zt.msm(k, target, cfg, stats=stats)      # the phases of one warm call
    out["counts"] = calls.as_dict()
    timing = time_runs(lambda: zt.msm(k, target, cfg), runs=args.runs, sync=sync)
    c0 = time.process_time()
    zt.msm(k, target, cfg)
    out["cpu_s"] = time.process_time() - c0          # CPU seconds of one call, all threads
    out.update(median_s=timing.median_s, min_s=timing.min_s, clean=timing.clean, tried=timing.tried,
               times_s=timing.all_s, window=stats.get("window"), chunks=stats.get("chunks"),
               rounds=stats.get("rounds"), entries=stats.get("entries"), segment=stats.get("segment"),
               glv=stats.get("glv"),
               phase_s={k2: round(v, 4) for k2, v in stats.get("time", {}).items()},
               peak_rss_bytes=(_vm_kib("VmHWM") - base_rss) * 1024)
    return out


def run_sub(group, log_size, kind, threads, runs, window, prepared, checkpoint, device="cpu",
            weighted=False, mixed=False, point_major=False, segment=None, max_registers=None,
            unbalanced=False, no_glv=False) -> dict:
    cmd = [sys.executable, "-m", "bench.msm", "--one", "--group", group, "--log-size", str(log_size),
           "--kind", kind, "--threads", str(threads), "--runs", str(runs), "--device", device]
    if window:
        cmd += ["--window", str(window)]
    if prepared:
        cmd += ["--prepared"] + (["--checkpoint", str(checkpoint)] if checkpoint else [])
    if weighted:
        cmd += ["--weighted"]
    if mixed:
        cmd += ["--mixed"]
    if point_major:
        cmd += ["--point-major"]
    if segment:
        cmd += ["--segment", str(segment)]
    if max_registers:
        cmd += ["--max-registers", str(max_registers)]
    if unbalanced:
        cmd += ["--unbalanced"]
    if no_glv:
        cmd += ["--no-glv"]
    res = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{res.stderr[-3000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def peer_rows(run_peers: bool, threads: int, wait_quiet_s: float) -> tuple[list[dict], str]:
    from bench import peers
    if run_peers:
        rows = []
        for p in ("gnark", "arkworks"):
            rows += [r.to_row() for r in peers.run_peer(p, "msm", threads, wait_quiet_s=wait_quiet_s)]
        return rows, "measured in this run"
    path = default_results_dir() / "peers.json"
    if not path.exists():
        return [], "no peer results (run with --peers)"
    doc = json.loads(path.read_text())
    rows = [r for r in doc["rows"] if r["op"] == "g1_msm"]
    return rows, f"from {path.name} ({doc.get('created', '?')}), not this run"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--group", default="bn254.g1", help=argparse.SUPPRESS)
    ap.add_argument("--log-size", type=int, default=16, help=argparse.SUPPRESS)
    ap.add_argument("--kind", default="dense", help=argparse.SUPPRESS)
    ap.add_argument("--curves", default="bn254.g1", help="groups, comma-separated")
    ap.add_argument("--log-sizes", default="10,12,14,16,18,20")
    ap.add_argument("--kinds", default="dense,sparse")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--window", type=int, default=None, help="override the cost model's window")
    ap.add_argument("--prepared", action="store_true", help="also time GZKP prepared bases")
    ap.add_argument("--weighted", action="store_true",
                    help="--device cuda: also time the device program on the bases' weighted table "
                         "(MSMConfig.weighted; the table made apart, in prepare_s)")
    ap.add_argument("--mixed", action="store_true",
                    help="--device cuda: also time the device program on prepared bases kept affine "
                         "(MSMConfig.mixed: mixed additions in the first accumulation round), and on "
                         "their affine weighted table with --weighted")
    ap.add_argument("--point-major", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--segment", type=int, default=None,
                    help="--device cuda: entries a lane of the accumulation adds (MSMConfig.segment)")
    ap.add_argument("--max-registers", type=int, default=None,
                    help="--device cuda: ptxas's register cap for the device program's kernels "
                         "(MSMConfig.max_registers)")
    ap.add_argument("--unbalanced", action="store_true",
                    help="--device cuda: the first accumulation round's lanes in bucket order "
                         "(MSMConfig(balanced=False)), for an A/B against the default")
    ap.add_argument("--no-glv", action="store_true",
                    help="--device cuda: no GLV split of the scalars (MSMConfig(glv=False)), for an A/B "
                         "against the default")
    ap.add_argument("--layouts", default="word",
                    help="--device cuda: the device program's point layouts to time, comma-separated: "
                         "word (PointTensor's), point (MSMConfig.point_major)")
    ap.add_argument("--checkpoint", type=int, default=None, help="GZKP checkpoint interval M")
    ap.add_argument("--keep-going", action="store_true",
                    help="a configuration that fails is reported and skipped (the others still run)")
    ap.add_argument("--peers", action="store_true", help="run gnark-crypto and arkworks in this run")
    ap.add_argument("--wait-quiet", type=float, default=600.0,
                    help="seconds the peers wait for other processes to go quiet (bench.peers)")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="cuda: the Triton target on a GPU (no peers: theirs are CPU programs)")
    ap.add_argument("--save", default="msm")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    layouts = args.layouts.split(",")
    if (args.weighted or args.mixed or args.point_major or args.segment or args.max_registers or args.unbalanced
            or args.no_glv or layouts != ["word"]) and args.device != "cuda":
        ap.error("--weighted, --mixed, --layouts, --segment, --max-registers, --unbalanced, --no-glv: the device "
                 "program (--device cuda)")
    if not set(layouts) <= {"word", "point"}:
        ap.error(f"--layouts: word and/or point, got {args.layouts!r}")
    if args.one:
        print(json.dumps(one(args)))
        return 0

    if args.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            ap.error("--device cuda: no CUDA GPU here")
        prows, peer_note = [], "none (GPU run; the peers are CPU programs)"
    else:
        prows, peer_note = peer_rows(args.peers, args.threads, args.wait_quiet or None)
    rows, lines = [], []

    def save(rows):
        if not args.no_save:
            return write_results(args.save, rows + [dict(p) for p in prows],
                                 notes=f"zt.msm vs peers; peers {peer_note}; "
                                       f"threads={args.threads}; ratio = zktensor median / peer median")

    for group in args.curves.split(","):
        curve = group.split(".")[0]
        op = ("g1" if group.endswith("g1") else "g2") + "_msm"
        for ls in [int(x) for x in args.log_sizes.split(",")]:
            for kind in args.kinds.split(","):
                variants = [(False, False, False)] + [(True, False, False)] * args.prepared + \
                    [(False, True, False)] * args.weighted + [(True, False, True)] * args.mixed + \
                    [(False, True, True)] * (args.weighted and args.mixed)
                variants = [v + (lay == "point",) for v in variants for lay in layouts]
                for prepared, weighted, mixed, pm in variants:
                    label = ("weighted" if weighted else "prepared" if prepared else "") + \
                        ("_mixed" if mixed else "") + ("_pm" if pm else "") + ("_unbalanced" if args.unbalanced else "") + \
                        ("_no_glv" if args.no_glv else "")
                    try:
                        r = run_sub(group, ls, kind, args.threads, args.runs, args.window, prepared,
                                    args.checkpoint, args.device, weighted, mixed, pm, args.segment,
                                    args.max_registers, args.unbalanced, args.no_glv)
                    except RuntimeError as e:
                        if not args.keep_going:
                            raise
                        print(f"{group} 2^{ls} {kind} {label}"
                              f" FAILED: {str(e).strip().splitlines()[-1] if str(e).strip() else e}", flush=True)
                        continue
                    n = r["n"]
                    peers = {p["system"]: p for p in prows if p["field_or_curve"] == PEER_CURVE[curve]
                             and p["size"] == n and p["threads"] == args.threads and p["op"] == op}
                    ratios = {s: r["median_s"] / p["median_s"] for s, p in peers.items()} if kind == "dense" else {}
                    extra = {"scalars": kind, "window": r["window"], "chunks": r["chunks"], "cpu_s": r["cpu_s"],
                             "peak_rss_bytes": r["peak_rss_bytes"], "clean": f"{r['clean']}/{r['tried']}",
                             "phase_s": r["phase_s"], "ratio_to_peer": ratios, "peers": peer_note,
                             "counts": r.get("counts"), "arith": r["arith"], "segment": r.get("segment"),
                             "max_registers": args.max_registers, "balanced": not args.unbalanced,
                             "glv": r.get("glv")}
                    if prepared or weighted:
                        extra.update(prepare_s=r["prepare_s"], prepared_bytes=r["prepared_bytes"],
                                     checkpoint=args.checkpoint or 1)
                    name = op + ("_sparse" if kind == "sparse" else "") + (f"_{label}" if label else "")
                    rows.append(make_row("zktensor", name, PEER_CURVE[curve], n, args.threads, r["median_s"],
                                         r["min_s"], strategy=f"c={r['window']}",
                                         target="cpu" if args.device == "cpu" else "cuda-triton",
                                         runs=r["clean"], extra=extra))
                    ratio_txt = " ".join(f"{s}: {v:.2f}x" for s, v in ratios.items())
                    line = (f"{group:14s} {r['arith']:5s} 2^{ls:<3d} {kind:6s} {label:15s} "
                            f"{r['median_s'] * 1e3:9.1f} ms (cpu {r['cpu_s'] * 1e3:8.1f} ms, "
                            f"clean {r['clean']}/{r['tried']})  c={r['window']!s:<2} "
                            f"peak {r['peak_rss_bytes'] / 2**20:7.1f} MiB  {ratio_txt}")
                    print(line, flush=True)
                    lines.append(line)
                    save(rows)          # after every row: a run stopped at its time limit keeps its rows
    if not args.no_save:
        print(f"saved {save(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
