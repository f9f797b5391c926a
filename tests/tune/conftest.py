"""Every tuning test gets its own cache file (ZKTENSOR_TUNE_CACHE) and a fresh in-memory view."""
import pytest

from zktensor.tune import cache as tune_cache


@pytest.fixture
def cache_file(tmp_path, monkeypatch):
    path = tmp_path / "tune.json"
    monkeypatch.setenv("ZKTENSOR_TUNE_CACHE", str(path))
    tune_cache.clear_memory()
    yield path
    tune_cache.clear_memory()
