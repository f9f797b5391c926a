"""The on-disk table cache: a second load maps what the first built; a corrupt or truncated
entry is reported, never used, and rebuilt. Proofs from mapped tables verify."""
from __future__ import annotations

import json

import pytest

from serve_support import DEMO


@pytest.fixture
def cache(tmp_path, monkeypatch):
    from zktensor.groth16 import table_cache
    monkeypatch.setattr(table_cache, "cache_dir", lambda: tmp_path / "tables")
    return tmp_path / "tables"


def load():
    from zktensor.groth16.prover import Prover
    return Prover(str(DEMO / "demo.zkey"), r1cs=str(DEMO / "demo.r1cs"), device="cpu", helper=False)


def proves(p) -> bool:
    from zktensor.groth16.verifier import verify
    proof, public = p.prove(str(DEMO / "demo.wtns"))
    return verify(str(DEMO / "verification_key.json"), public, proof)


def entry(cache):
    (d,) = [d for d in cache.iterdir() if not d.name.startswith(".")]
    return d


def test_mapped_tables_equal_built_ones_and_prove(cache):
    import torch
    built = load()
    assert built.tables_from == "built" and built.validated.get("zkey_check")
    mapped = load()
    assert mapped.tables_from == "mapped" and mapped.validated == built.validated
    assert "validate" not in mapped.load_times                  # the stamp came with the tables
    for name, b in built.bases.items():
        m = mapped.bases[name]
        assert (b.prepared is None) == (m.prepared is None)
        if b.prepared is not None:
            for attr, v in vars(b.prepared).items():
                w = getattr(m.prepared, attr)
                assert torch.equal(v, w) if isinstance(v, torch.Tensor) else v == w, attr
    for f in ("fixed_1", "fixed_2"):                            # the blinding's fixed-base tables
        assert torch.equal(getattr(built, f).table.data, getattr(mapped, f).table.data)
    assert "fixed_g1" not in mapped.load_times
    assert proves(mapped)


def damage(d, how: str) -> None:
    if how == "meta":
        (d / "meta.json").write_text((d / "meta.json").read_text()[:-20])
        return
    f = max((p for p in d.iterdir() if p.suffix == ".bin"), key=lambda p: p.stat().st_size)
    data = bytearray(f.read_bytes())
    if how == "flip":
        data[len(data) // 2] ^= 0x10
    else:
        del data[-4:]
    f.write_bytes(bytes(data))


def test_corrupt_entry_is_reported_and_rebuilt(cache, capfd):
    load()
    for how in ("flip", "truncate", "meta"):
        d = entry(cache)
        damage(d, how)
        capfd.readouterr()
        p = load()
        err = capfd.readouterr().err
        assert "corrupt" in err and str(d) in err, how
        assert p.tables_from == "built", how
        json.loads((entry(cache) / "meta.json").read_text())       # rebuilt and stored again
    assert proves(p)
    assert load().tables_from == "mapped"


def test_checked_files_skip_the_checksum_until_they_change(cache, monkeypatch, capfd):
    """The first mapped load checks every file's crc32 and remembers each file's identity in
    the entry's `checked`; later loads check only that the identities hold (an unreadable
    `checked` is a full check again). A file damaged
    with its modification time set back still has a new change time: checked in full,
    reported, rebuilt."""
    import os
    from zktensor.groth16 import table_cache
    load()
    d = entry(cache)
    files = {f.name for f in d.iterdir() if f.suffix == ".bin" and f.stat().st_size}
    calls = []
    real = table_cache._crcs
    monkeypatch.setattr(table_cache, "_crcs", lambda a: calls.append(1) or real(a))
    assert load().tables_from == "mapped" and len(calls) == len(files)
    checked = json.loads((d / "checked").read_text())
    assert set(checked) == files
    calls.clear()
    assert load().tables_from == "mapped" and not calls
    (d / "checked").write_text("not json")                     # an unreadable record: checked in full
    assert load().tables_from == "mapped" and len(calls) == len(files)
    calls.clear()
    assert load().tables_from == "mapped" and not calls
    f = d / max(files, key=lambda n: (d / n).stat().st_size)
    st = f.stat()
    damage(d, "flip")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    capfd.readouterr()
    p = load()
    assert "checksum mismatch" in capfd.readouterr().err and p.tables_from == "built"
    assert proves(p)


def test_key_digest_is_remembered_by_identity(tmp_path, monkeypatch):
    """`remembered_digest`: a file's sha256, read once per identity (a key loaded again is
    not read through); a file rewritten in place gets its new content's digest."""
    import hashlib
    from zktensor.groth16 import table_cache
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path / "cache"))
    f = tmp_path / "k.zkey"
    f.write_bytes(b"one key")
    want = hashlib.sha256(b"one key").hexdigest()
    assert table_cache.remembered_digest(f) == want
    real = table_cache.file_digest
    monkeypatch.setattr(table_cache, "file_digest", lambda p: pytest.fail("read again"))
    assert table_cache.remembered_digest(f) == want
    monkeypatch.setattr(table_cache, "file_digest", real)
    f.write_bytes(b"another key")
    assert table_cache.remembered_digest(f) == hashlib.sha256(b"another key").hexdigest()


def test_off_and_zkey_objects_bypass_the_cache(cache, monkeypatch):
    from zktensor.groth16.formats import read_zkey
    from zktensor.groth16.prover import Prover
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE", "off")
    assert load().tables_from == "built" and not cache.exists()
    monkeypatch.delenv("ZKTENSOR_TABLE_CACHE")
    assert Prover(read_zkey(str(DEMO / "demo.zkey")), device="cpu", helper=False).tables_from == "built"
    assert not cache.exists()


def test_entries_of_other_specs_stay_and_stale_layouts_go(cache, capfd):
    """The CLI's plain tables and the service's weighted ones are both kept for one key (each
    would otherwise rebuild the other's every time); an entry laid out by other code is
    reported and removed when the key is stored again."""
    from zktensor.groth16.key import PLAIN
    from zktensor.groth16.prover import Prover

    def plain():
        return Prover(str(DEMO / "demo.zkey"), device="cpu", helper=False, checkpoint=PLAIN)

    def weighted():                 # M = 1: consolidated, as the service's default is for large keys
        return Prover(str(DEMO / "demo.zkey"), device="cpu", helper=False, checkpoint=1)

    assert weighted().tables_from == "built" and plain().tables_from == "built"
    assert len([d for d in cache.iterdir() if not d.name.startswith(".")]) == 2
    assert weighted().tables_from == "mapped" and plain().tables_from == "mapped"
    # an entry of older code: another layout fingerprint under another name
    d = max((d for d in cache.iterdir() if not d.name.startswith(".")), key=lambda d: (d / "meta.json").stat().st_mtime)
    meta = json.loads((d / "meta.json").read_text())
    meta["layout"] = "0" * 16
    (d / "meta.json").write_text(json.dumps(meta))
    stale = d.rename(cache / ("0" * 64))
    capfd.readouterr()
    assert plain().tables_from == "built"
    err = capfd.readouterr().err
    assert str(stale) in err and "other code" in err and not stale.exists()
    assert weighted().tables_from == "mapped" and plain().tables_from == "mapped"


def test_entry_key_names_the_target():
    """On CPU tensors the Triton target keeps other tables than the CPU target: their
    entries must differ (a Triton-target prover had stored under the CPU prover's key)."""
    import zktensor as zt
    from zktensor.groth16 import table_cache
    specs = {"a": {"n": 4}}
    cpu = table_cache.entry_key("d" * 64, specs, "cpu")
    with zt.config(target="triton"):
        triton = table_cache.entry_key("d" * 64, specs, "cpu")
    assert cpu != triton and cpu == table_cache.entry_key("d" * 64, specs, "cpu")


def test_drop_pages_keeps_a_mapped_table_readable(tmp_path):
    """A dropped table's pages come back from the file on the next read, unchanged."""
    import numpy as np
    from zktensor.groth16.formats.binfile import drop_pages
    path = tmp_path / "t.bin"
    want = np.arange(1 << 16, dtype="<i4")
    want.tofile(path)
    a = np.memmap(path, dtype="<i4", mode="c", shape=want.shape)
    assert int(a.sum()) == int(want.sum())
    assert drop_pages(a) is True
    assert np.array_equal(a, want)
    assert drop_pages(np.zeros(4)) is False          # not a mapping: nothing to drop
