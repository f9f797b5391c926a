"""The persisted tuning cache: keys, atomic merged writes, corrupt and stale files."""
import json
import warnings

import pytest

import zktensor as zt
from zktensor.config import tuning_enabled
from zktensor.tune.resolve import lookup as config_lookup
from zktensor.tune import cache as TC
from zktensor.tune.cache import TuneCache, TuneCacheWarning, bucket, device_name, op_key

DEV = "cpu:Test CPU x2"


def entry(field="bn254.fr", op="ntt", b=4096, **config):
    return {"device": DEV, "field": field, "op": op, "bucket": b, "config": config or {"cpu_unroll": 4},
            "time_s": 1e-3, "complete": True}


def test_keys():
    assert [bucket(n) for n in (0, 1, 2, 3, 4, 5, 1000, 1024, 1025)] == [1, 1, 2, 4, 4, 8, 1024, 1024, 2048]
    assert op_key("ntt") == "ntt" and op_key("ntt", 1) == "ntt" and op_key("ntt", 3) == "ntt.b4"
    name = device_name("cpu")
    assert name.startswith("cpu:") and name.rsplit(" x", 1)[1].isdigit()


def test_default_path(monkeypatch, tmp_path):
    monkeypatch.delenv("ZKTENSOR_TUNE_CACHE", raising=False)
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path / "c"))
    assert TC.cache_path() == tmp_path / "c" / "tune.json"
    monkeypatch.setenv("ZKTENSOR_TUNE_CACHE", str(tmp_path / "mine.json"))
    assert TC.cache_path() == tmp_path / "mine.json"
    monkeypatch.setenv("ZKTENSOR_TUNE_CACHE", "off")
    assert TC.cache_path() is None
    assert not tuning_enabled()


def test_put_reload_lookup(cache_file):
    c = TuneCache(cache_file)
    c.put(entry(cpu_unroll=4, cpu_rows_log=6))
    doc = json.loads(cache_file.read_text())
    assert doc["format"] == TC.FORMAT and doc["zktensor_version"] == zt.__version__
    assert list(doc["entries"]) == [f"{DEV}|bn254.fr|ntt|4096"]
    fresh = TuneCache(cache_file)            # another process
    assert fresh.lookup("ntt", "bn254.fr", 4096, device_key=DEV) == {"cpu_unroll": 4, "cpu_rows_log": 6}
    assert fresh.lookup("ntt", "bn254.fr", 3000, device_key=DEV) is not None      # same bucket
    # the nearest bucket within a factor of 4, not beyond; other fields/devices/ops: nothing
    assert fresh.lookup("ntt", "bn254.fr", 16384, device_key=DEV) is not None
    assert fresh.lookup("ntt", "bn254.fr", 32768, device_key=DEV) is None
    assert fresh.lookup("ntt", "bls12_381.fr", 4096, device_key=DEV) is None
    assert fresh.lookup("ntt", "bn254.fr", 4096, device_key="cpu:Other x2") is None
    assert fresh.lookup("mul", "bn254.fr", 4096, device_key=DEV) is None
    # batched lookups fall back to the unbatched entry, and prefer their own
    assert fresh.lookup("ntt", "bn254.fr", 4096, batch=3, device_key=DEV)["cpu_unroll"] == 4
    c.put(entry(op="ntt.b4", cpu_unroll=1))
    assert TuneCache(cache_file).lookup("ntt", "bn254.fr", 4096, batch=3, device_key=DEV)["cpu_unroll"] == 1


def test_concurrent_writers_merge(cache_file):
    a, b = TuneCache(cache_file), TuneCache(cache_file)
    a.refresh()
    b.refresh()
    a.put(entry(b=1024))
    b.put(entry(b=2048))          # b never saw a's entry in memory: the write merges with the disk
    keys = set(json.loads(cache_file.read_text())["entries"])
    assert keys == {f"{DEV}|bn254.fr|ntt|1024", f"{DEV}|bn254.fr|ntt|2048"}
    assert not [p for p in cache_file.parent.iterdir() if p.name.startswith(".tune.json.")]   # no temp left


@pytest.mark.parametrize("content,suffix", [
    ("{not json", ".corrupt"),
    ('{"format": 1, "zktensor_version": "0.0.1", "entries": {}}', ".stale-0.0.1"),
    ('{"format": 99, "zktensor_version": "%s", "entries": {}}' % zt.__version__, ".stale"),
    ('[1, 2, 3]', ".corrupt"),
])
def test_corrupt_or_stale_file_is_reported_ignored_and_moved_aside(cache_file, content, suffix):
    cache_file.write_text(content)
    c = TuneCache(cache_file)
    with pytest.warns(TuneCacheWarning, match="ignoring the tuning cache"):
        assert c.lookup("ntt", "bn254.fr", 4096, device_key=DEV) is None
    assert c.problem
    assert cache_file.read_text() == content        # reading never touches the file
    with pytest.warns(TuneCacheWarning, match="moved to"):
        c.put(entry())
    moved = cache_file.with_name(cache_file.name + suffix)
    assert moved.read_text() == content
    assert TuneCache(cache_file).lookup("ntt", "bn254.fr", 4096, device_key=DEV) == {"cpu_unroll": 4}


def test_ops_survive_a_corrupt_cache(cache_file):
    cache_file.write_text("\x00\x01 garbage")
    F = zt.field("bn254.fr")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        a, b = F.tensor([3, 4, 5]), F.tensor([6, 7, 8])
        assert (a * b).to_ints() == [18, 28, 40]
    assert any(issubclass(x.category, TuneCacheWarning) for x in w)


def test_remove(cache_file):
    c = TuneCache(cache_file)
    c.put(entry(b=1024))
    c.put(entry(b=2048))
    assert c.remove(lambda e: e["bucket"] == 1024) == 1
    assert list(TuneCache(cache_file).refresh().entries) == [f"{DEV}|bn254.fr|ntt|2048"]


def test_disabled_cache_cannot_be_written(monkeypatch):
    monkeypatch.setenv("ZKTENSOR_TUNE_CACHE", "off")
    TC.clear_memory()
    with pytest.raises(RuntimeError, match="disabled"):
        TC.default_cache().put(entry())
    assert config_lookup("ntt", "bn254.fr", 4096, "cpu") is None
    TC.clear_memory()
