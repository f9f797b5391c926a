"""A user's first BN254 proof on a GPU: the wait while Triton compiles its kernels.

    TRITON_CACHE_DIR=$(mktemp -d) python -m bench.gpu_first_proof --json first_proof.json

Loads a BN254 key on `cuda` and proves twice. With Triton's cache empty (a fresh
TRITON_CACHE_DIR), the key's load and the first proof include compiling every kernel they
launch; the second proof is warm. With ``--warmup``, ``zktensor warmup --device cuda
--zkey ... --wtns ...`` (its compile pass in one process per core, runtime/compile_shards.py,
with a proof of this key among its steps) runs first and is timed as part of the first use. The kernels' generated source must already be at hand
(the kernel cache or `.zktensor-prebuilt/`). Fixture: $ZKT_FIXTURES_BUILD/<name> (default
tests/fixtures/build/poseidon_like).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path


def _cubins(root: str | None) -> int:
    """GPU binaries in Triton's cache (-1: no cache folder named)."""
    if not root or not os.path.isdir(root):
        return -1
    from zktensor.groth16.warmup import cubins
    return cubins(root)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    build = Path(os.environ.get("ZKT_FIXTURES_BUILD", "tests/fixtures/build"))
    ap.add_argument("--fixture", default="poseidon_like")
    ap.add_argument("--json", default=None)
    ap.add_argument("--warmup", action="store_true", help="run `zktensor warmup --device cuda` first (timed)")
    ap.add_argument("--jobs", type=int, default=None, help="the warmup's processes (default: the cores)")
    args = ap.parse_args(argv)
    fdir = build / args.fixture
    zkey, wtns = fdir / "circuit_final.zkey", fdir / "witness.wtns"
    if not zkey.exists() or not wtns.exists():
        ap.error(f"{fdir}: needs circuit_final.zkey and witness.wtns")
    import torch
    if not torch.cuda.is_available():
        ap.error("no CUDA GPU here")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from zktensor.groth16.prover import Prover
    from zktensor.groth16.verifier import verify
    cache = os.environ.get("TRITON_CACHE_DIR")
    out = {"fixture": args.fixture, "device": torch.cuda.get_device_name(0), "triton_cache": cache,
           "cubins_before": _cubins(cache)}
    out["warmup_s"] = 0.0
    if args.warmup:
        import subprocess
        t0 = time.perf_counter()
        cmd = [sys.executable, "-m", "zktensor.cli", "warmup", "--device", "cuda", "--force",
               "--zkey", str(zkey), "--wtns", str(wtns)]
        rc = subprocess.call(cmd + (["--jobs", str(args.jobs)] if args.jobs else []))
        out["warmup_s"], out["warmup_rc"] = time.perf_counter() - t0, rc
        out["cubins_after_warmup"] = _cubins(cache)
    t0 = time.perf_counter()
    prover = Prover(zkey, device="cuda")
    torch.cuda.synchronize()
    out["load_s"] = time.perf_counter() - t0
    out["cubins_after_load"] = _cubins(cache)
    # 2 and 3 warm: without and with the per-node profile, to tell the profile's own cost
    # apart (bench/results/gpu/h200_2026-11-26b.md)
    # the first proof sampled on every thread (bench/stack_sampler.py): where its seconds
    # go when it compiles nothing (bench/results/gpu/h200_2026-11-27.md)
    from bench.stack_sampler import StackSampler
    for i in (1, 2, 3):
        t = time.perf_counter()
        with StackSampler() if i == 1 else contextlib.nullcontext() as sampler:
            proof, public = prover.prove(wtns, check=False, verify=False, profile=(i == 3))
            torch.cuda.synchronize()
        out[f"prove_{i}_s"] = time.perf_counter() - t
        if sampler is not None:
            out["prove_1_samples"] = sampler.top(100)
            print(sampler.report(40), file=sys.stderr)
    out["cubins_after"] = _cubins(cache)
    out["verifies"] = bool(verify(prover.zkey, public, proof))
    out["first_use_s"] = out["warmup_s"] + out["load_s"] + out["prove_1_s"]
    if prover.last_run is not None:
        out["profile"] = prover.last_run.table()
    print(json.dumps({k: v for k, v in out.items() if k != "profile"}, indent=1))
    print(out.get("profile", ""))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0 if out["verifies"] else 1


if __name__ == "__main__":
    sys.exit(main())
