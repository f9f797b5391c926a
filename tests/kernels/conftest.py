"""Fixtures of the kernel tests: the same parameters as the field tests' (tests/field/conftest.py).
Shared data comes from the support modules by their package path (`tests.ec.ec_support`,
`tests.field.values`, `tests.oracles`)."""
import pytest

from zktensor.algebra import FIELD_NAMES


@pytest.fixture(params=FIELD_NAMES)
def field_name(request):
    return request.param
