"""The Groth16 verifier's pairing check: prod of 4 pairings = 1, BN254 (and BLS12-381).

    python -m bench.pairing                    # timing rows to bench/results/pairing.json
    python -m bench.pairing --smoke            # 2 runs, nothing written

What ``zktensor prove`` adds to every proof by verifying it before writing it: one
multi-pairing check (``zktensor.algebra.pairing.pairing_check``: four Miller loops
sharing their squarings, one final exponentiation) and the whole ``verify`` call
(key checks cached, vk_x, the check). Rows: op ``pairing_check4`` (the plain
4-pair check), ``pairing_check_prepared`` (the key's part prepared once:
``groth16.prepared_vk``, what the verifier runs) and ``groth16_verify``, size 1.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine_info, row_from_timing, time_runs, write_results  # noqa: E402


def instance(curve: str):
    """A valid Groth16 check (vk, public, proof) built with known discrete logarithms."""
    import random

    from zktensor.algebra.curves import group, lincomb
    from zktensor.groth16.formats.json_io import Proof, VerificationKey
    rng = random.Random(7)
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    r = G1.r

    def m1(k):
        return lincomb(G1, None, [(k, G1.generator)])

    def m2(k):
        return lincomb(G2, None, [(k, G2.generator)])
    al, be, ga, de, a, b = (rng.randrange(1, r) for _ in range(6))
    u = [rng.randrange(1, r) for _ in range(3)]
    x = [rng.randrange(r) for _ in range(2)]
    ux = (u[0] + sum(xi * ui for xi, ui in zip(x, u[1:]))) % r
    c = (a * b - al * be - ga * ux) * pow(de, -1, r) % r
    vk = VerificationKey(curve, 2, m1(al), m2(be), m2(ga), m2(de), tuple(m1(v) for v in u), None)
    return vk, x, Proof(curve, m1(a), m2(b), m1(c)), (m1(a), m2(b), m1(al), m2(be), m1(ux), m2(ga), m1(c), m2(de))


def measure(curve: str, runs: int) -> list[dict]:
    from zktensor.algebra.curves import group
    from zktensor.algebra.pairing import pairing_check
    from zktensor.groth16.verifier import verify
    vk, x, proof, (A, B, al, be, vx, ga, C, de) = instance(curve)
    p = group(f"{curve}.g1").p
    pairs = [((A[0], -A[1] % p), B), (al, be), (vx, ga), (C, de)]
    if not pairing_check(curve, pairs) or not verify(vk, x, proof):
        raise AssertionError("the benchmark instance does not verify")
    rows = []
    from zktensor.groth16.prepared_vk import groth16_check
    for op, fn in (("pairing_check4", lambda: pairing_check(curve, pairs)),
                   ("pairing_check_prepared", lambda: groth16_check(vk, pairs[0][0], B, vx, C)),
                   ("groth16_verify", lambda: verify(vk, x, proof))):
        t = time_runs(fn, runs=runs)
        rows.append(row_from_timing("zktensor", op, curve, 1, 1, t, unit="checks/s",
                                    extra="Python ints (zktensor.algebra.pairing)"))
        print(f"{curve:10s} {op:16s} {1e3 * t.median_s:8.2f} ms  ({t.extra})", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--curves", default="bn254,bls12_381")
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--smoke", action="store_true", help="2 runs of BN254, nothing written")
    ap.add_argument("--name", default="pairing")
    a = ap.parse_args(argv)
    curves = ["bn254"] if a.smoke else a.curves.split(",")
    rows = [row for c in curves for row in measure(c, 2 if a.smoke else a.runs)]
    if not a.smoke:
        print(write_results(a.name, rows, machine_info(),
                            notes="one 4-pairing product check and one whole Groth16 verify per call"))


if __name__ == "__main__":
    main()
