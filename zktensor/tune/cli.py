"""`zktensor autotune`: search kernel configurations and keep the winners.

    zktensor autotune [--ops mul,ntt,msm,groth16] [--fields bn254,bls12_381.fr]
                      [--sizes 2^12,2^16] [--budget SECONDS] [--device cpu|cuda]
                      [--zkey circuit.zkey] [--force] [--thorough] [--show] [--dry-run]

Interrupt with Ctrl-C at any time: what was measured is already in the cache, and
the same command resumes. Exit status: 0 when every task has a winner (or was already
tuned), 1 when a task could not be tuned, 2 for bad usage, 130 when interrupted.
"""
from __future__ import annotations

import argparse
import os
import sys

from ..cli import register


def parse_size(s: str) -> int:
    s = s.strip().lower().replace("**", "^")
    mult = {"k": 1 << 10, "m": 1 << 20}
    if "^" in s:
        a, b = s.split("^", 1)
        return int(a) ** int(b)
    if s and s[-1] in mult:
        return int(s[:-1]) * mult[s[-1]]
    return int(s)


def _list(s: str | None) -> list[str] | None:
    return [x.strip() for x in s.split(",") if x.strip()] if s else None


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ops", help="comma-separated: mul, ntt, msm, msm_prepared, groth16 (default mul,ntt,msm)")
    p.add_argument("--fields", help="curves (bn254), fields (bn254.fr) or groups (bn254.g1); default bn254")
    p.add_argument("--sizes", help="comma-separated sizes: 4096, 2^12, 64k (default: per op)")
    p.add_argument("--budget", type=float, default=600.0, help="seconds for the whole run (default 600)")
    p.add_argument("--device", help="cpu or cuda (default: cuda when present)")
    p.add_argument("--batch", type=int, default=1, help="rows per call (NTT batch, MSM scalar rows)")
    p.add_argument("--zkey", help="groth16: take the curve and sizes from this proving key")
    p.add_argument("--force", action="store_true", help="tune again what the cache already has")
    p.add_argument("--thorough", action="store_true", help="larger spaces (slow compiles: NTT B=4, G2 MSMs)")
    p.add_argument("--max-copies", type=int, default=4,
                   help="msm_prepared/groth16: most GZKP weighted copies of the bases to try (memory)")
    p.add_argument("--cache", help="cache file (default $ZKTENSOR_TUNE_CACHE or ~/.cache/zktensor/tune.json)")
    p.add_argument("--progress", default="auto", choices=["auto", "tqdm", "rich", "plain"])
    p.add_argument("--min-time", type=float, default=0.1, help="seconds of timed runs per candidate (at least 3 runs)")
    p.add_argument("--show", action="store_true", help="print the cache's entries for this device and exit")
    p.add_argument("--dry-run", action="store_true", help="list the tasks and their candidates; measure nothing")


def run(a: argparse.Namespace) -> int:
    if a.cache:
        os.environ["ZKTENSOR_TUNE_CACHE"] = a.cache
    from . import DEFAULT_FIELDS, DEFAULT_OPS, Tuner, plan
    from .cache import cache_path, default_cache, device_name
    from .progress import make_progress
    from .tuner import fmt_s
    if cache_path() is None:
        print("zktensor: error: the tuning cache is off (ZKTENSOR_TUNE_CACHE=off)", file=sys.stderr)
        return 2
    try:
        sizes = [parse_size(s) for s in _list(a.sizes)] if a.sizes else None
    except ValueError:
        print(f"zktensor: error: bad --sizes {a.sizes!r} (use 4096, 2^12 or 64k)", file=sys.stderr)
        return 2
    if sizes and any(n < 1 for n in sizes):
        print("zktensor: error: sizes must be positive", file=sys.stderr)
        return 2
    cache = default_cache()
    if a.show:
        return _show(cache, device_name(a.device or _default_device()))
    try:
        tasks = plan(_list(a.ops) or DEFAULT_OPS, _list(a.fields) or DEFAULT_FIELDS, sizes, a.device,
                     batch=a.batch, zkey=a.zkey, thorough=a.thorough, max_copies=a.max_copies)
    except (ValueError, OSError) as e:
        print(f"zktensor: error: {e}", file=sys.stderr)
        return 2
    progress = make_progress(a.progress)
    progress.line(f"autotune: {len(tasks)} task(s) on {device_name(a.device or _default_device())}, "
                  f"budget {a.budget:g} s, cache {cache.path}")
    if a.dry_run:
        for t in tasks:
            progress.line(f"  {t.label()} {t.options if t.options.get('coset') or t.options.get('sparse') else ''}")
        return 0
    tuner = Tuner(cache=cache, budget=a.budget, progress=progress, force=a.force, min_time=a.min_time)
    try:
        results = tuner.run(tasks)
    except KeyboardInterrupt:
        progress.close()
        print(f"\ninterrupted: everything measured so far is in {cache.path}; run the same command to resume",
              file=sys.stderr)
        return 130
    progress.line("")
    progress.line(f"{'task':<34} {'status':<8} {'time':>10} {'default':>10} {'speedup':>8}  config")
    for r in results:
        sp = f"{r.speedup:.2f}x" if r.speedup else "-"
        cfg = " ".join(f"{k}={v}" for k, v in (r.config or {}).items()) or r.message
        progress.line(f"{r.task.label():<34} {r.status:<8} {fmt_s(r.time_s):>10} {fmt_s(r.default_time_s):>10} "
                      f"{sp:>8}  {cfg}")
    return 1 if any(r.status == "error" for r in results) else 0


def _default_device() -> str:
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def _show(cache, device: str) -> int:
    from .tuner import fmt_s
    cache.refresh()
    print(f"{cache.path}: {len(cache.entries)} entr{'y' if len(cache.entries) == 1 else 'ies'}"
          + (f" (ignored: {cache.problem})" if cache.problem else ""))
    for e in sorted(cache.entries.values(), key=lambda e: (e["device"] != device, e["device"], e["field"],
                                                           e["op"], int(e["bucket"]))):
        cfg = " ".join(f"{k}={v}" for k, v in e["config"].items())
        flag = "" if e.get("complete") else " (partial)"
        print(f"  {e['device']} | {e['field']} | {e['op']} | {e['bucket']}: {fmt_s(e.get('time_s'))}{flag}  {cfg}")
    return 0


register("autotune", "tune kernel parameters for this device (persisted; resumable)", configure, run)
