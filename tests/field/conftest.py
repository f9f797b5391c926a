import pytest

from zktensor.algebra import FIELD_NAMES


@pytest.fixture(params=FIELD_NAMES)
def field_name(request):
    return request.param
