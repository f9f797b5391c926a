"""Shared data for the elliptic-curve tests (imported by them; fixtures in conftest.py):
oracle points per group, drawn once.

Random points are k·g by the Python-int oracle (tests/oracles/ec.py); a few of
them are combined into more with oracle additions, so that even the 753-bit
MNT4-753 group costs only a handful of oracle scalar multiplications.
"""
from __future__ import annotations

import functools
import os
import random
import sys
from pathlib import Path

import pytest

try:
    from tests.oracles import ec as O
except ImportError:  # run without the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.oracles import ec as O

import zktensor as zt
from zktensor.algebra.curves import group as group_record

PAIRING_GROUPS = ["bn254.g1", "bn254.g2", "bls12_381.g1", "bls12_381.g2"]
ALL_GROUPS = PAIRING_GROUPS + ["mnt4753.g1"]


@functools.lru_cache(maxsize=None)
def oracle_points(name: str, count: int, seed: int = 1) -> tuple:
    """`count` pseudo-random subgroup points (affine tuples) of the named group."""
    g = group_record(name)
    rng = random.Random(f"{name}-{seed}")
    base = [O.mul(g, g.generator, rng.randrange(1, g.r)) for _ in range(min(count, 4))]
    pts = list(base)
    while len(pts) < count:
        pts.append(O.add(g, pts[-1], base[len(pts) % len(base)]))
    return tuple(pts[:count])


def scalars(name: str, count: int, seed: int = 2) -> list[int]:
    g = group_record(name)
    rng = random.Random(f"k-{name}-{seed}")
    return [rng.randrange(g.r) for _ in range(count)]


def edge_case(name, n=20):
    """Bases with repeats and identities, scalars with 0, 1, 2, r - 1 and repeats:
    (group record, zt group, bases, scalars)."""
    g = group_record(name)
    pts = list(oracle_points(name, 6))
    bases = [pts[i % len(pts)] for i in range(n)]
    bases[3] = None
    bases[7] = bases[8]                       # a repeated base ...
    ks = scalars(name, n)
    ks[0], ks[1], ks[2], ks[4] = 0, 1, g.r - 1, 2
    ks[7] = ks[8]                             # ... with a repeated scalar
    ks[9] = 1
    return g, zt.group(name), bases, ks


# device-MSM cases built on CPU tensors that interpret for minutes: run with
# ZKTENSOR_INTERPRET_ALL=1 (on a CUDA machine tests/gpu runs BN254 and BLS12-381 compiled)
INTERPRETED_MINUTES = [pytest.mark.slow, pytest.mark.skipif(
    os.environ.get("ZKTENSOR_INTERPRET_ALL") != "1",
    reason="interpreted, minutes: ZKTENSOR_INTERPRET_ALL=1 (tests/gpu: BN254 and BLS12-381 on a GPU)")]
