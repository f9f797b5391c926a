"""Fixtures for the Groth16 format and verifier tests.

``fixtures`` (session scope) runs ``scripts/fixtures.sh`` once, which installs
snarkjs/circom2 under tests/fixtures/build/ and builds every circuit of
tests/circuits/fixtures.txt (fast when already built). Tests that use it are
marked ``snarkjs``; without node/npm they are skipped.
"""
from __future__ import annotations


import pytest

from fixture_support import BUILD, FIXTURE_NAMES, ROOT, Fixture, Snarkjs, build_fixtures


def pytest_configure(config):
    # Also registered test-wide; repeated here so this suite does not depend on that.
    config.addinivalue_line(
        "markers", "snarkjs: needs node/npm and the circom/snarkjs fixtures built by scripts/fixtures.sh")


@pytest.fixture(scope="session")
def fixtures() -> dict[str, Fixture]:
    return build_fixtures()


@pytest.fixture(scope="session")
def snarkjs(fixtures) -> Snarkjs:
    return Snarkjs(BUILD)


@pytest.fixture(params=FIXTURE_NAMES)
def fx(request, fixtures) -> Fixture:
    """Each fixture in turn."""
    return fixtures[request.param]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    # Whatever needs the built fixtures needs node and snarkjs: mark it so, even
    # where a test forgot, so that ``-m 'not snarkjs'`` leaves exactly the pure tests.
    here = str(ROOT / "tests" / "groth16")
    for item in items:
        if str(item.path).startswith(here) and "fixtures" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.snarkjs)
