"""Pre-build the generated Triton source of the GPU path into a folder that travels.

    python -m zktensor.prebuild                              # int32 + fp64, BN254, BLS12-381, MNT4-753
    python -m zktensor.prebuild --strategies int32 --curves bn254 --out DIR
    python -m zktensor.prebuild --proofs tests/fixtures/build/multiplier   # + a whole proof's kernels
    python -m zktensor.prebuild --setup                      # + `zktensor setup`'s (bench/groth16.py on a GPU)
    python -m zktensor.prebuild --warmup                     # + `zktensor warmup --device cuda`'s

Generating a kernel's Triton source goes through the MLIR bindings, which a lent GPU
machine does not have (the torch-mlir wheel does not travel). This command generates
them here, into `.zktensor-prebuilt/` at the repository's root (ignored by git; name it
in the device tool's `carry`), where the kernel cache looks after its own
(`runtime.cache.lookup`). Triton compiles the source to the GPU's code there, on first use.

How: it runs the operations of the GPU path on the Triton target at tiny sizes, on CPU
tensors, records every kernel-cache entry they use, and copies the Triton ones (generated
source, no CPU code) into the folder. Which programs an operation traces depends on the
target and the strategy, not on the device, so the GPU finds the same keys. The values
come from the host (`on_host`): every Triton program is generated, then run as the same
program compiled for the CPU target (every strategy and target computes the same words);
the device MSM's host program runs and its module is generated, its sums come from the
CPU target's MSM; the NTT's module and tables are made, its transform runs by stages.
So a workload runs as it does on a GPU, branches included, in seconds: a whole proof with its witness check and its
verification, the tests marked gpu, a key setup. Entries are keyed by the compiler's own
source (`cache.compiler_fingerprint`): after editing the compiler, run this again.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import time
from pathlib import Path

CURVES = ("bn254", "bls12_381", "mnt4753")        # every curve with a group (tests/gpu runs them all)
STRATEGIES = ("int32", "fp64")


def _cache_modules():
    """Every module that serves kernel-cache lookups (the cache may live in kernels/ or runtime/)."""
    import importlib
    mods = []
    for name in ("zktensor.runtime.cache",):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, "lookup") and mod not in mods:
            mods.append(mod)
    return mods


_tag = {"now": ""}


@contextlib.contextmanager
def recording():
    """Collects the entry directories handed out by the kernel cache inside the block, and the
    workloads (`_tag`) that used each: {key: (path, {tags})}."""
    used: dict[str, tuple] = {}
    # programs and kernel modules this process loaded earlier are memoised past the cache:
    # forget them, so that every one the block uses is looked up (and so recorded) again
    from .kernels import elementwise
    from .runtime.triton_modules import forget_loaded
    elementwise._programs.clear()
    elementwise._by_object.clear()
    forget_loaded()

    def note(key, d):
        used.setdefault(key, (Path(d), set()))[1].add(_tag["now"])
    patched = []
    for mod in _cache_modules():
        look, build = mod.lookup, mod.build

        def lookup(key, _look=look):
            d = _look(key)
            if d is not None:
                note(key, d)
            return d

        def build_(key, builder, *args, _build=build, **kw):
            d = _build(key, builder, *args, **kw)
            note(key, d)
            return d
        mod.lookup, mod.build = lookup, build_
        patched.append((mod, look, build))
    try:
        yield used
    finally:
        for mod, look, build in patched:
            mod.lookup, mod.build = look, build


@contextlib.contextmanager
def on_host():
    """Inside the block, computations on the Triton target get their values from the host
    (module doc): Triton programs are generated (so recorded), then run compiled for the
    CPU target; device MSMs make their launches' arguments but not the launches, and their
    sums are the CPU target's MSM's (written into the device program's output), and so are
    `point_sums`'s; sparse products make their kernel's module and take the CPU target's
    product."""
    import numpy as np
    import torch

    import zktensor as zt
    from .ir import ec as ec_ir
    from .kernels import elementwise, field_programs, msm_ec, msm_triton, ntt_triton, sparse_device
    from .kernels.ntt_plan import tables
    from .ops.msm import device
    from .ops.ntt import stage_ntt
    real_get, real_msm, real_launch = elementwise.get_program, device.device_msm, device._launch
    real_ntt, real_csr, real_sums = ntt_triton.ntt_triton, sparse_device.csr_matvec, device.point_sums

    def get_program(prog, strategy, target, cuts=None):
        if target != "triton":
            return real_get(prog, strategy, target, cuts)
        c = real_get(prog, strategy, target, cuts)
        if isinstance(prog, ec_ir.EcProgram) and len(c.meta["calls"]) == 1:
            msm_triton.module(c, True)                  # the point kernel's own module
        return real_get(prog, strategy, "cpu", cuts)

    def device_msm(GS, scalars, points, cfg, stats=None, bits=None, weighted=None, glv=None):
        out = real_msm(GS, scalars, points, cfg, stats, bits=bits, weighted=weighted, glv=glv)
        with zt.config(target="cpu"):
            if isinstance(scalars, torch.Tensor):       # standard-form words (Lr, B, n)
                scalars = scalars.permute(1, 2, 0).numpy()
            if isinstance(scalars, np.ndarray):         # (B, n, Lr) words
                B, n = scalars.shape[:2]
                scalars = GS.Fr.from_bytes(np.ascontiguousarray(scalars).tobytes()).reshape(B, n)   # 32-bit words
            if isinstance(points, device.AffinePoints):
                points = points.points()
            sums = zt.msm(scalars, points)
        out.data.copy_(sums.data.reshape(out.data.shape))
        return out
    def ntt(plan, data, cfg, strategy, out=None):
        ntt_triton.module(plan.F.params, strategy, True)       # the pass kernels' module
        tables(plan.F, plan.n, data.device).twiddles(plan.inverse)
        plan.pre_table(), plan.post_table(bitrev=not plan.bitrev_in)
        return stage_ntt(plan, data)                            # the same transform, by stages

    def csr_matvec(F, strategy, coef, cols, row_ptr, w):
        from .groth16.r1cs_to_qap import SparseFr
        sparse_device.module(F, strategy, True)                 # the kernel's module
        rows = np.repeat(np.arange(row_ptr.shape[0] - 1), np.diff(row_ptr.numpy()))
        with zt.config(target="cpu"):
            return SparseFr(F, rows, cols.numpy(), coef, row_ptr.shape[0] - 1).matvec(w).data

    def point_sums(GS, points, M, strategy=None):
        from .kernels.point_formulas import tree_sum
        out = real_sums(GS, points, M, strategy)               # the module, its launch dropped
        rows = points.shape[0] // M
        by_k = points.data.reshape(GS.L, GS.K, rows, M).transpose(2, 3).reshape(GS.L, GS.K, M * rows)
        with zt.config(target="cpu"):
            out.data.copy_(tree_sum(GS, by_k, rows, M))       # column k·rows + r: group r's k-th point
        return out

    saved = [(m, "get_program", getattr(m, "get_program")) for m in (elementwise, field_programs, msm_ec)]
    for m, name, _ in saved:
        setattr(m, name, get_program)
    device.device_msm, device._launch, ntt_triton.ntt_triton = device_msm, (lambda *a, **kw: None), ntt
    sparse_device.csr_matvec, device.point_sums = csr_matvec, point_sums
    try:
        yield
    finally:
        for m, name, f in saved:
            setattr(m, name, f)
        device.device_msm, device._launch, ntt_triton.ntt_triton = real_msm, real_launch, real_ntt
        sparse_device.csr_matvec, device.point_sums = real_csr, real_sums


# -- the workloads: each touches the programs one part of the GPU path traces ----------------
def field_ops(curve: str, progress) -> None:
    import torch

    import zktensor as zt
    for part in ("fr", "fq"):
        F = zt.field(f"{curve}.{part}")
        progress(f"{F.name} elementwise")
        a = F.tensor([1, 2, F.p - 1, 5])
        b = F.tensor([3, F.p - 2, 7, 0])
        c = a * b + a - b
        c = (-c).square()
        a.inverse()
        a ** 5                      # the exponent tests/gpu checks (a program per exponent)
        F.full((2,), 3) * a[:2]
        c.to_ints()
        assert torch.equal((a == a), torch.ones(4, dtype=torch.bool))


def ntt_ops(curve: str, progress) -> None:
    import zktensor as zt
    F = zt.field(f"{curve}.fr")
    progress(f"{F.name} ntt")
    x = F.tensor([[i + 1 for i in range(16)], [3 * i for i in range(16)]])
    X = zt.ntt(x)
    zt.intt(X)
    E = zt.ntt(x, coset=F.nqr)
    zt.intt(E, coset=F.nqr)
    zt.intt(zt.ntt(x, output_order="bitrev"), input_order="bitrev")


def msm_ops(curve: str, progress) -> None:
    """Point programs (on-curve check, addition, doubling, scalar multiplication, affine
    conversion) and the MSM's device program, as the GPU tests and bench/msm.py use them."""
    import torch

    import zktensor as zt
    from .algebra.curves import GROUP_NAMES
    from .kernels.point_formulas import max_chain
    for name in (g for g in GROUP_NAMES if g.startswith(f"{curve}.")):       # MNT4-753: G1 only
        G = zt.group(name)
        progress(f"{G.name} points and msm")
        gen = torch.Generator().manual_seed(1)
        P = G.random(4, generator=gen)
        xy, inf = P.affine()
        k = G.Fr.random(4, generator=gen)
        P = G.from_affine(xy, inf, check=True)
        (P[:2] + P[2:]).double().to_affine()
        G.tensor([G.params.generator, None])
        zt.msm(k, P).to_affine()
        zt.msm(k, zt.msm_prepare(P))
        # affine bases and their affine weighted table (MSMConfig.mixed: bench.msm --mixed)
        zt.msm(k, zt.msm_prepare(P, config=zt.MSMConfig(mixed=True)), zt.MSMConfig(mixed=True, weighted=True))
        zt.msm([[1, 2, 3, 4], [0, 0, 1, 5]], P)
        # the weighted table's doublings (MSMConfig.weighted: bench.msm --weighted): double_n
        # fuses runs of 2^j <= max_chain doublings, and 2·max_chain - 1 of them take every run
        P.double(2 * max_chain(G) - 1)


def proof(path: Path, progress) -> None:
    """A proof on the Triton target as the GPU runs it (the device graph): the key's load and
    validation, the witness check against the .r1cs beside the key (if there), the proof,
    its verification; once with its tables in host memory in chunks (a key larger than
    the device)."""
    from .groth16.prover import Prover
    zkey = path / "circuit_final.zkey" if path.is_dir() else path
    wtns = zkey.parent / "witness.wtns"
    r1cs = next(iter(sorted(zkey.parent.glob("*.r1cs"))), None)
    progress(f"proof {zkey.parent.name}")
    for budget in (None, 1):
        Prover(zkey, r1cs=r1cs, device="cpu", helper=False, table_cache=False, table_budget=budget).prove(wtns)


def key_setup(progress) -> None:
    """`groth16.setup` on the Triton target (bench/groth16.py makes its keys on the GPU) for
    the demo circuit, BN254 (the bench's curve)."""
    import tempfile

    from .groth16.demo import demo_files
    from .groth16.setup import setup
    progress("setup of the demo circuit")
    with tempfile.TemporaryDirectory() as d:
        setup(demo_files()["r1cs"], Path(d) / "demo.zkey", device="cpu")


def warmup_steps(curve: str, progress) -> None:
    """The steps of `zktensor warmup --device cuda` (groth16/warmup.py), as run on a GPU; only
    for the curves of Groth16 keys, the warmup's."""
    from .groth16 import warmup
    from .groth16.formats.curves import CURVES as KEY_CURVES
    if curve not in KEY_CURVES:
        return
    for step in warmup.steps("cuda"):
        progress(f"{curve} warmup {step}")
        warmup.run_step(step, curve, "cpu")


def prebuild(out: Path, curves=CURVES, strategies=STRATEGIES, proofs=(), progress=None,
             workloads=None, setup: bool = False, warmup: bool = False) -> dict:
    """Run the workloads (default: field_ops, ntt_ops, msm_ops; each a function of a curve name
    and a progress callback) for each strategy on the Triton target and copy the Triton entries
    they used into out/kernels/; returns the manifest (also written to out/manifest.json)."""
    workloads = (field_ops, ntt_ops, msm_ops) if workloads is None else tuple(workloads)
    workloads += (warmup_steps,) * warmup
    import zktensor as zt
    from .runtime import cache
    say = progress or (lambda msg: print(f"prebuild: {msg}", file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    with recording() as used, on_host():
        for strategy in strategies:
            with zt.config(strategy=strategy, target="triton", tuned=False):
                for curve in curves:
                    for work in workloads:
                        _tag["now"] = f"{strategy} {curve} {work.__name__}"
                        work(curve, lambda m, s=strategy: say(f"[{s}] {m} ({time.perf_counter() - t0:.0f} s)"))
                for p in proofs:
                    _tag["now"] = f"{strategy} proof {Path(p).name}"
                    proof(Path(p), lambda m, s=strategy: say(f"[{s}] {m} ({time.perf_counter() - t0:.0f} s)"))
                if setup:
                    _tag["now"] = f"{strategy} setup"
                    key_setup(lambda m, s=strategy: say(f"[{s}] {m} ({time.perf_counter() - t0:.0f} s)"))
    dest = out / "kernels"
    dest.mkdir(parents=True, exist_ok=True)
    entries = {}
    for key, (src, tags) in sorted(used.items()):
        if not (src / "kernels.py").exists():
            continue                        # a CPU entry: compiled for this host, not carried
        meta = json.loads((src / "meta.json").read_text())
        entries[key] = {"kind": meta.get("kind", "program"), "kernels": meta.get("kernels", []),
                        "used_by": sorted(tags)}
        if src.resolve() != (dest / key).resolve():
            tmp = dest / f".{key}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("__pycache__"))
            shutil.rmtree(dest / key, ignore_errors=True)
            tmp.rename(dest / key)
    manifest = {"fingerprint": cache.compiler_fingerprint(), "curves": list(curves),
                "strategies": list(strategies), "proofs": [str(p) for p in proofs], "setup": setup,
                "warmup": warmup,
                "entries": entries, "seconds": round(time.perf_counter() - t0, 1)}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    say(f"{len(entries)} Triton entries in {out} ({manifest['seconds']} s)")
    return manifest


def main(argv=None) -> int:
    from .runtime.cache import PREBUILT_DIR, _PKG
    ap = argparse.ArgumentParser(prog="python -m zktensor.prebuild", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(_PKG.parent / PREBUILT_DIR), help="folder (default: %(default)s)")
    ap.add_argument("--curves", default=",".join(CURVES))
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--proofs", default="", help="zkey files or fixture folders (circuit_final.zkey and "
                    "witness.wtns, a .r1cs if there), comma-separated: also the kernels of a whole proof of each")
    ap.add_argument("--setup", action="store_true", help="also the kernels of `zktensor setup` (BN254)")
    ap.add_argument("--warmup", action="store_true", help="also the kernels of `zktensor warmup --device cuda`")
    args = ap.parse_args(argv)
    for c in args.curves.split(","):
        if c not in CURVES:
            ap.error(f"--curves: {c!r} is not a curve ({', '.join(CURVES)})")
    for s in args.strategies.split(","):
        if s not in STRATEGIES:
            ap.error(f"--strategies: {s!r} is not a Triton strategy ({', '.join(STRATEGIES)})")
    proofs = [Path(p) for p in args.proofs.split(",") if p]
    for p in proofs:
        zkey = p / "circuit_final.zkey" if p.is_dir() else p
        if not zkey.exists() or not (zkey.parent / "witness.wtns").exists():
            ap.error(f"--proofs: {p}: needs circuit_final.zkey (or the zkey given) and witness.wtns beside it")
    prebuild(Path(args.out), args.curves.split(","), args.strategies.split(","), proofs, setup=args.setup,
             warmup=args.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
