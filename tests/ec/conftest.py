"""Fixtures of the elliptic-curve tests; shared data lives in ec_support.py."""
from __future__ import annotations

import pytest

from ec_support import ALL_GROUPS, PAIRING_GROUPS


@pytest.fixture(params=ALL_GROUPS)
def any_group(request):
    return request.param


@pytest.fixture(params=PAIRING_GROUPS)
def pairing_group(request):
    return request.param
