"""Pre-build the generated Triton source of the GPU path into a folder that travels.

    python -m zktensor.prebuild                              # int32 + fp64, BN254 + BLS12-381
    python -m zktensor.prebuild --strategies int32 --curves bn254 --out DIR
    python -m zktensor.prebuild --proofs tests/fixtures/build/multiplier   # + a whole proof's kernels

Generating a kernel's Triton source goes through the MLIR bindings, which a lent GPU
machine does not have (the torch-mlir wheel does not travel). This command generates
them here, into `.zktensor-prebuilt/` at the repository's root (ignored by git; name it
in the device tool's `carry`), where the kernel cache looks after its own
(`runtime.cache.lookup`). Triton compiles the source to the GPU's code there, on first use.

How: it runs the operations of the GPU path on the Triton target at tiny sizes, on CPU
tensors (under the Triton interpreter), records every kernel-cache entry they use, and
copies the Triton ones (generated source, no CPU code) into the folder. Which programs
an operation traces depends on the target and the strategy, not on the device, so the
GPU finds the same keys. Entries are keyed by the compiler's own source
(`cache.compiler_fingerprint`): after editing the compiler, run this again.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import time
from pathlib import Path

CURVES = ("bn254", "bls12_381")
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
    # programs this process compiled earlier are memoised past the cache: forget them, so
    # that every program the block uses is looked up (and so recorded) again
    from .kernels import elementwise
    elementwise._programs.clear()
    elementwise._by_object.clear()

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

        def build_(key, builder, _build=build):
            d = _build(key, builder)
            note(key, d)
            return d
        mod.lookup, mod.build = lookup, build_
        patched.append((mod, look, build))
    try:
        yield used
    finally:
        for mod, look, build in patched:
            mod.lookup, mod.build = look, build


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
    """Point programs (on-curve check, addition, affine conversion) run interpreted on a few
    points; the MSM's device program is generated and its launches made but not interpreted
    (a full-width MSM is hundreds of interpreted point formulas deep; its module and the
    programs inside it are what is recorded, not its values)."""
    import torch

    import zktensor as zt
    from .ops.msm import device
    for g in ("g1", "g2"):
        G = zt.group(f"{curve}.{g}")
        progress(f"{G.name} points and msm")
        gen = torch.Generator().manual_seed(1)
        with zt.config(target="cpu"):
            P = G.random(4, generator=gen)
            xy, inf = P.affine()
        k = G.Fr.random(4, generator=gen)
        P = G.from_affine(xy, inf, check=True)
        (P[:2] + P[2:]).to_affine()
        real = device._launch
        device._launch = lambda *a, **kw: None
        try:
            zt.msm(k, P)
            zt.msm(k, zt.msm_prepare(P))
        finally:
            device._launch = real


def proof(path: Path, progress) -> None:
    from .groth16.prover import Prover
    zkey = path / "circuit_final.zkey" if path.is_dir() else path
    wtns = zkey.parent / "witness.wtns"
    progress(f"proof {zkey.parent.name}")
    Prover(zkey, device="cpu", helper=False).prove(wtns, check=False, verify=True)


def prebuild(out: Path, curves=CURVES, strategies=STRATEGIES, proofs=(), progress=None,
             workloads=None) -> dict:
    """Run the workloads (default: field_ops, ntt_ops, msm_ops; each a function of a curve name
    and a progress callback) for each strategy on the Triton target and copy the Triton entries
    they used into out/kernels/; returns the manifest (also written to out/manifest.json)."""
    workloads = (field_ops, ntt_ops, msm_ops) if workloads is None else tuple(workloads)
    import zktensor as zt
    from .runtime import cache
    say = progress or (lambda msg: print(f"prebuild: {msg}", file=sys.stderr, flush=True))
    t0 = time.perf_counter()
    with recording() as used:
        for strategy in strategies:
            with zt.config(strategy=strategy, target="triton", tuned=False):
                for curve in curves:
                    for work in workloads:
                        _tag["now"] = f"{strategy} {curve} {work.__name__}"
                        work(curve, lambda m, s=strategy: say(f"[{s}] {m} ({time.perf_counter() - t0:.0f} s)"))
                for p in proofs:
                    _tag["now"] = f"{strategy} proof {Path(p).name}"
                    proof(Path(p), lambda m, s=strategy: say(f"[{s}] {m} ({time.perf_counter() - t0:.0f} s)"))
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
                "strategies": list(strategies), "proofs": [str(p) for p in proofs],
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
                    "witness.wtns), comma-separated: also the kernels of a whole proof of each")
    args = ap.parse_args(argv)
    for s in args.strategies.split(","):
        if s not in STRATEGIES:
            ap.error(f"--strategies: {s!r} is not a Triton strategy ({', '.join(STRATEGIES)})")
    proofs = [Path(p) for p in args.proofs.split(",") if p]
    for p in proofs:
        zkey = p / "circuit_final.zkey" if p.is_dir() else p
        if not zkey.exists() or not (zkey.parent / "witness.wtns").exists():
            ap.error(f"--proofs: {p}: needs circuit_final.zkey (or the zkey given) and witness.wtns beside it")
    prebuild(Path(args.out), args.curves.split(","), args.strategies.split(","), proofs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
