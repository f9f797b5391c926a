"""``zktensor demo``: prove and verify the bundled example circuit, with no network and no node.

The circuit (``examples/demo/demo.circom``) says "I know a 64-bit secret whose keyed
MiMC-style hash is this": a range check (a mostly 0/1 witness) and 40 rounds of
x^7. Its compiled constraint system, a witness, a proving key made by snarkjs and
the verification key are committed next to it (``examples/demo/build.sh`` remakes
them); the key's entropy is public, so it is a demo key, nothing more.

The demo loads the key once (``Prover``), proves the witness (checked against
the .r1cs first), prints the time of every node of the prover graph, verifies the
proof with ``zt.groth16.verify`` and compares the public signals with the ones
snarkjs computed.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

# A checkout has the files in examples/demo; an installed wheel carries the same files as
# zktensor/_demo (setup.py maps the one onto the other).
_CHECKOUT = Path(__file__).resolve().parents[2] / "examples" / "demo"
EXAMPLES = _CHECKOUT if _CHECKOUT.is_dir() else Path(__file__).resolve().parents[1] / "_demo"


def demo_files(root: Path | None = None) -> dict[str, Path]:
    root = Path(root) if root is not None else Path(os.environ.get("ZKTENSOR_DEMO_DIR", EXAMPLES))
    files = {"r1cs": root / "demo.r1cs", "wtns": root / "demo.wtns", "zkey": root / "demo.zkey",
             "vk": root / "verification_key.json", "public": root / "public.json"}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"the demo's files are missing: {', '.join(missing)} (they ship in the "
                                "repository's examples/demo and in the wheel's zktensor/_demo; set ZKTENSOR_DEMO_DIR "
                                "to point elsewhere)")
    return files


def run_demo(profile: bool = False, trace: str | None = None, out: str | None = None, device=None,
             root=None, print_=print) -> int:
    """Run the demo; returns the exit status (0: proof made and verified)."""
    from .formats.json_io import read_public
    from .prover import Prover, describe_run
    from .verifier import verify

    f = demo_files(root)
    print_(f"zktensor demo: {f['zkey'].parent}")
    t0 = time.perf_counter()
    prover = Prover(f["zkey"], r1cs=f["r1cs"], device=device)
    t1 = time.perf_counter()
    print_(f"  key: {prover.curve}, {prover.n_vars} wires, {prover.n_public} public, domain "
           f"{prover.domain_size}; loaded on {prover.device} in {1e3 * (t1 - t0):.0f} ms")
    outdir = out or tempfile.mkdtemp(prefix="zktensor-demo-")
    os.makedirs(outdir, exist_ok=True)
    proof_path, public_path = os.path.join(outdir, "proof.json"), os.path.join(outdir, "public.json")
    t2 = time.perf_counter()
    proof, public = prover.prove_to_files(f["wtns"], proof_path, public_path, profile=True)
    t3 = time.perf_counter()
    run = prover.last_run
    print_(f"  prove: {1e3 * (t3 - t2):.0f} ms ({describe_run(run)}, wall {1e3 * run.wall_s:.0f} ms)")
    for s in sorted(run.stats, key=lambda s: s.start_s):
        mark = "*" if s.critical else " "
        print_(f"    {s.name:<14}{mark} {s.lane:<6} {1e3 * s.seconds:8.1f} ms")
    print_("    (* = critical path: POLY -> H-MSM; the witness MSMs run beside it)")
    if profile:
        print_(run.table())
    if trace:
        run.write_trace(trace)
        print_(f"  trace: {trace}")
    t4 = time.perf_counter()
    ok = verify(f["vk"], public, proof)
    t5 = time.perf_counter()
    same = public == read_public(f["public"])
    print_(f"  verify: {'OK' if ok else 'INVALID'} ({1e3 * (t5 - t4):.0f} ms, pairings in Python)")
    print_(f"  public signals {public}: {'the same as snarkjs computed' if same else 'DIFFER from snarkjs'}")
    print_(f"  proof.json and public.json in {outdir}")
    return 0 if ok and same else 1


__all__ = ["run_demo", "demo_files", "EXAMPLES"]
