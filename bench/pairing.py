"""The Groth16 verifier's pairing check: prod of 4 pairings = 1, BN254 and BLS12-381.

    python -m bench.pairing                    # timing rows to bench/results/pairing.json
    python -m bench.pairing --smoke            # 2 runs of BN254, nothing written

What ``zktensor prove`` adds to every proof by verifying it before writing it: one
multi-pairing check (four Miller loops sharing their squarings, one final exponentiation)
and the whole ``verify`` call (key checks cached, B's membership in G2, vk_x, the check).
Rows, size 1 unless said:

* ``pairing_check4``: the plain 4-pair check; ``pairing_check_prepared``: the key's part
  prepared once (``groth16.prepared_vk``, what the verifier runs); each on Python ints
  (``zktensor.algebra.pairing``) and compiled (``zktensor.kernels.pairing_cpu``, strategy
  int64), the `strategy` column says which;
* ``g2_membership``: B in G2 (psi(B) = [t - 1]B), both ways;
* ``groth16_verify``: the whole verify, compiled where it can be (the default), and with
  ``compiled=False`` paths only (``ZKTENSOR_NO_COMPILER`` would do the same in a fresh process);
* ``vk_x``: IC[0] + sum pub_i·IC[i+1] for 800 public signals (size 800), full-width
  random ones and small signed ones (|v| < 2^16, half of them r - v), by the compiled
  Straus, by Python ints and by the MSM (torch loaded): the verifier's cost model
  (``groth16.verifier`` PY_STEP, MSM_FIXED, ...) is read off these rows.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import machine_info, row_from_timing, time_runs, write_results  # noqa: E402


def instance(curve: str, n_public: int = 2, small: bool = False, seed: int = 7):
    """A valid Groth16 check (vk, public, proof, points) built with known discrete logarithms;
    `small`: public signals below 2^16 in absolute value (half of them negative: r - v)."""
    import random

    from zktensor.algebra.curves import group, lincomb
    from zktensor.groth16.formats.json_io import Proof, VerificationKey
    rng = random.Random(seed)
    G1, G2 = group(f"{curve}.g1"), group(f"{curve}.g2")
    r = G1.r

    def m1(k):
        return lincomb(G1, None, [(k, G1.generator)])

    def m2(k):
        return lincomb(G2, None, [(k, G2.generator)])
    al, be, ga, de, a, b = (rng.randrange(1, r) for _ in range(6))
    u = [rng.randrange(1, r) for _ in range(n_public + 1)]
    x = [(rng.randrange(1, 1 << 16) * rng.choice((1, -1))) % r if small else rng.randrange(r)
         for _ in range(n_public)]
    ux = (u[0] + sum(xi * ui for xi, ui in zip(x, u[1:]))) % r
    c = (a * b - al * be - ga * ux) * pow(de, -1, r) % r
    vk = VerificationKey(curve, n_public, m1(al), m2(be), m2(ga), m2(de), tuple(m1(v) for v in u), None)
    return vk, x, Proof(curve, m1(a), m2(b), m1(c)), (m1(a), m2(b), m1(al), m2(be), m1(ux), m2(ga), m1(c), m2(de))


def _timed(fn, runs):
    """time_runs with enough calls per run for about 20 ms (a run of one short call is at the
    mercy of the scheduler's time slice)."""
    import time
    fn()
    t0 = time.perf_counter()
    fn()
    number = max(1, round(0.02 / max(time.perf_counter() - t0, 1e-6)))
    return time_runs(fn, runs=runs, number=number)


def _row(curve, op, t, size=1, strategy="", extra=""):
    print(f"{curve:10s} {op:24s} size {size:4d} {1e3 * t.median_s:9.3f} ms  ({extra}; {t.extra})", flush=True)
    return row_from_timing("zktensor", op, curve, size, 1, t, unit="checks/s", strategy=strategy, extra=extra)


def measure(curve: str, runs: int) -> list[dict]:
    from zktensor.algebra import pairing as ate
    from zktensor.algebra.curves import group
    from zktensor.groth16 import prepared_vk, verifier
    from zktensor.kernels import pairing_cpu
    vk, x, proof, (A, B, al, be, vx, ga, C, de) = instance(curve)
    p = group(f"{curve}.g1").p
    neg_a = (A[0], -A[1] % p)
    pairs = [(neg_a, B), (al, be), (vx, ga), (C, de)]
    cp = pairing_cpu.compiled(curve, build=True)
    if cp is None:
        print(f"{curve}: no compiled pairing here (no MLIR bindings, cold cache): Python rows only")
    elif not cp.check(pairs):
        raise AssertionError("the compiled check rejects the benchmark instance")
    if not ate.pairing_check(curve, pairs) or not verifier.verify(vk, x, proof):
        raise AssertionError("the benchmark instance does not verify")
    rows = []
    cases = [("pairing_check4", "", lambda: ate.pairing_check(curve, pairs)),
             ("pairing_check_prepared", "", lambda: prepared_vk.groth16_check(vk, neg_a, B, vx, C, compiled=False)),
             ("g2_membership", "", lambda: ate.g2_in_subgroup(curve, B))]
    if cp is not None:
        cases += [("pairing_check4", pairing_cpu.STRATEGY, lambda: cp.check(pairs)),
                  ("pairing_check_prepared", pairing_cpu.STRATEGY,
                   lambda: prepared_vk.groth16_check(vk, neg_a, B, vx, C, compiled=True)),
                  ("g2_membership", pairing_cpu.STRATEGY, lambda: cp.g2_in_subgroup(B)),
                  ("groth16_verify", pairing_cpu.STRATEGY, lambda: verifier.verify(vk, x, proof))]
    for op, strategy, fn in cases:
        rows.append(_row(curve, op, _timed(fn, runs), strategy=strategy,
                         extra="compiled (kernels.pairing_cpu)" if strategy else "Python ints (algebra.pairing)"))
    rows.append(_row(curve, "groth16_verify", _timed(lambda: _verify_python(vk, x, proof), runs),
                     extra="Python ints only"))
    rows += measure_vk_x(curve, max(2, runs // 4), cp is not None)
    return rows


def _verify_python(vk, x, proof):
    """verify() with every compiled path off: what a machine without the compiler runs."""
    from zktensor.groth16.verifier import verify
    from zktensor.kernels import pairing_cpu
    real = pairing_cpu.compiled
    pairing_cpu.compiled = lambda curve, build=None: None     # what compiled() answers without a compiler
    try:
        return verify(vk, x, proof)
    finally:
        pairing_cpu.compiled = real


def measure_vk_x(curve: str, runs: int, compiled: bool, n: int = 800) -> list[dict]:
    """vk_x of n public signals, each way, full-width and small signed signals."""
    import zktensor  # noqa: F401  (the MSM row runs with torch loaded, as in the prover)
    from zktensor.groth16.verifier import vk_x
    rows = []
    for small in (False, True):
        vk, x, _, _ = instance(curve, n_public=n, small=small, seed=11)
        want = vk_x(vk, x, way="python")
        for way in (["compiled"] if compiled else []) + ["python", "msm"]:
            if vk_x(vk, x, way=way) != want:
                raise AssertionError(f"vk_x by {way} differs")
            t = _timed(lambda: vk_x(vk, x, way=way), runs)
            rows.append(_row(curve, "vk_x", t, size=n, strategy="int64" if way == "compiled" else "",
                             extra=f"{way}; {'small signed' if small else 'full-width'} signals"))
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
                            notes="one 4-pairing product check, one G2 membership test, one whole Groth16 "
                                  "verify per call; vk_x of 800 public signals"))


if __name__ == "__main__":
    main()
