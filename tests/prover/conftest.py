"""Fixtures for the prover, setup and CLI tests.

The snarkjs fixtures are the ones tests/groth16 uses (``scripts/fixtures.sh``,
via ``fixture_support``); tests that need them are marked ``snarkjs`` and skipped
without node/npm. ``provers`` keeps one loaded Prover per fixture for the whole
session: loading a key is the slow part, proving is what is tested.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "groth16"))   # fixture_support (shared with tests/groth16)

from fixture_support import BUILD, Snarkjs, build_fixtures  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "snarkjs: needs node/npm and the circom/snarkjs fixtures built by scripts/fixtures.sh")


@pytest.fixture(scope="session")
def fixtures():
    return build_fixtures()


@pytest.fixture(scope="session")
def snarkjs(fixtures) -> Snarkjs:
    return Snarkjs(BUILD)


@pytest.fixture(scope="session")
def provers(fixtures):
    """name -> Prover over the fixture's snarkjs key, with its .r1cs for the witness check."""
    from zktensor.groth16.prover import Prover
    cache = {}

    def get(name):
        if name not in cache:
            fx = fixtures[name]
            cache[name] = Prover(fx.zkey, r1cs=fx.r1cs, device="cpu")
        return cache[name]
    return get


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    for item in items:
        if str(item.path).startswith(str(HERE)) and "fixtures" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.snarkjs)
