"""Fixtures for the prover service tests (helpers in serve_support)."""
from __future__ import annotations

import pytest

from serve_support import Service


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "snarkjs: needs node/npm and the circom/snarkjs fixtures built by scripts/fixtures.sh")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    d = tmp_path_factory.mktemp("serve") / "run"
    svc = Service(d, env_extra={"ZKTENSOR_SERVE_TEST_HOOKS": "1"})
    yield svc
    svc.stop()

