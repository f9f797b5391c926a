"""Fixtures of the elliptic-curve tests; shared data lives in ec_support.py.

G1 of BN254 and BLS12-381 run with the default strategy (on an AVX-512 IFMA CPU the fp64
vector kernels); G2 and MNT4-753 with int64: every (group, strategy) pair compiles its own
point kernels, tens of seconds of LLVM each on a cold cache, and the strategies themselves
are checked against Python ints by the field tests.
"""
from __future__ import annotations

import pytest

import zktensor as zt
from ec_support import ALL_GROUPS, PAIRING_GROUPS

DEFAULT_STRATEGY_GROUPS = ("bn254.g1", "bls12_381.g1")


def _scoped(name):
    if name in DEFAULT_STRATEGY_GROUPS:
        yield name
    else:
        with zt.config(strategy="int64"):
            yield name


@pytest.fixture(params=ALL_GROUPS)
def any_group(request):
    yield from _scoped(request.param)


@pytest.fixture(params=PAIRING_GROUPS)
def pairing_group(request):
    yield from _scoped(request.param)
