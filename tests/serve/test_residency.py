"""Residency: keys by content, one load per key however many ask, LRU eviction within the
budget that never drops a key in use, before a load for the new key's estimated size and
after it for its real size (a fake loader: no torch, no key files needed); the estimate
itself against real keys' Prover.memory_bytes()."""
from __future__ import annotations

import threading
import time

import pytest

from zktensor.serve.residency import Residency


class FakeProver:
    def __init__(self, path, size):
        self.path, self.size, self.closed = path, size, False

    def memory_bytes(self):
        return self.size

    def close(self):
        self.closed = True


def residency(budget, sizes, delay=0.0, estimates=None):
    """A Residency over fake keys; ``loads`` records each load's path and the bytes resident
    plus reserved when it started (what the budget must already hold room for)."""
    loads = []
    res = None

    def load(path):
        loads.append(path)
        seen.append(res.resident_bytes() + res.reserved_bytes())
        time.sleep(delay)
        return FakeProver(path, sizes[path.rsplit("/", 1)[-1]]), "built"
    seen = []
    estimate = None if estimates is None else (lambda path: estimates[path.rsplit("/", 1)[-1]])
    res = Residency(budget, load, estimate)
    res.seen = seen
    return res, loads


def keyfiles(tmp_path, *names):
    out = []
    for n in names:
        (tmp_path / n).write_bytes(n.encode() * 10)
        out.append(str(tmp_path / n))
    return out


def test_lru_eviction_within_budget(tmp_path):
    a, b, c = keyfiles(tmp_path, "a", "b", "c")
    res, loads = residency(250, {"a": 100, "b": 100, "c": 100})
    for p in (a, b):
        r, was = res.acquire(p)
        assert not was
        res.release(r)
    r, was = res.acquire(a)                 # a is now the most recently used
    assert was
    res.release(r)
    rc, _ = res.acquire(c)                  # over budget: b (least recently used) goes
    res.release(rc)
    assert sorted(k.path.rsplit("/", 1)[-1] for k in res.keys()) == ["a", "c"]
    assert res.evicted == 1 and res.resident_bytes() == 200


def test_a_key_in_use_is_not_evicted_and_content_names_keys(tmp_path):
    a, b = keyfiles(tmp_path, "a", "b")
    res, loads = residency(150, {"a": 100, "b": 100, "a2": 100})
    ra, _ = res.acquire(a)                  # held
    rb, _ = res.acquire(b)
    assert {k.path for k in res.keys()} == {a, b}   # over budget, but a is busy
    res.release(ra)
    res.release(rb)
    link = tmp_path / "a2"
    link.symlink_to(a)
    r, was = res.acquire(str(link))         # same content: the resident key
    assert was and r.path == a
    res.release(r)
    (tmp_path / "a").write_bytes(b"changed")       # new content: a new key
    r, was = res.acquire(a)
    assert not was
    res.release(r)


def test_one_load_for_concurrent_requests(tmp_path):
    (a,) = keyfiles(tmp_path, "a")
    res, loads = residency(1 << 30, {"a": 1}, delay=0.3)
    got = []

    def go():
        r, was = res.acquire(a)
        got.append(was)
        res.release(r)
    ts = [threading.Thread(target=go) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(loads) == 1 and sorted(got) == [False, True, True, True]


def test_eviction_before_the_load_keeps_memory_within_the_budget(tmp_path):
    a, b, c = keyfiles(tmp_path, "a", "b", "c")
    sizes = {"a": 100, "b": 100, "c": 100}
    res, loads = residency(250, sizes, estimates=sizes)
    for p in (a, b, c):
        r, _ = res.acquire(p)
        res.release(r)
    # c's load started with a evicted already: 100 (b) + 100 (c, reserved) within 250
    assert res.seen == [100, 200, 200]
    assert sorted(k.path.rsplit("/", 1)[-1] for k in res.keys()) == ["b", "c"] and res.evicted == 1
    # without an estimate the same loads start over the budget (100 + 100 resident + 100 loading)
    res2, _ = residency(250, sizes)
    for p in (a, b, c):
        r, _ = res2.acquire(p)
        res2.release(r)
    assert res2.seen == [0, 100, 200] and res2.evicted == 1 and res2.resident_bytes() == 200


def test_an_estimate_too_low_or_failing_still_ends_within_the_budget(tmp_path):
    a, b, c = keyfiles(tmp_path, "a", "b", "c")
    res, _ = residency(250, {"a": 100, "b": 100, "c": 100}, estimates={"a": 10, "b": 10, "c": 10})
    for p in (a, b, c):
        r, _ = res.acquire(p)
        res.release(r)
    assert res.resident_bytes() == 200 and res.evicted == 1        # the eviction after the load
    res2, _ = residency(250, {"a": 100}, estimates={})           # KeyError: no estimate
    r, was = res2.acquire(a)
    assert not was and r.bytes == 100


def test_concurrent_loads_reserve_their_room(tmp_path):
    a, b, c = keyfiles(tmp_path, "a", "b", "c")
    sizes = {"a": 100, "b": 100, "c": 100}
    res, loads = residency(200, sizes, delay=0.3, estimates=sizes)
    r, _ = res.acquire(a)
    res.release(r)
    ts = [threading.Thread(target=lambda p=p: res.release(res.acquire(p)[0])) for p in (b, c)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # b and c loading at once reserved 200: a was evicted for them; never more than the budget
    assert max(res.seen) <= 200 and res.evicted == 1
    assert sorted(k.path.rsplit("/", 1)[-1] for k in res.keys()) == ["b", "c"]


def test_a_key_alone_over_the_budget_evicts_every_idle_key_first(tmp_path):
    a, b, big = keyfiles(tmp_path, "a", "b", "big")
    sizes = {"a": 100, "b": 100, "big": 500}
    res, _ = residency(250, sizes, estimates=sizes)
    ra, _ = res.acquire(a)                  # held: stays
    rb, _ = res.acquire(b)
    res.release(rb)
    r, _ = res.acquire(big)
    assert res.seen[-1] == 600 and {k.path.rsplit("/", 1)[-1] for k in res.keys()} == {"a", "big"}
    res.release(r)
    res.release(ra)


def _real_keys():
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    keys = [root / "examples" / "demo" / "demo.zkey"]
    rc = root / "tests" / "fixtures" / "build" / "range_check" / "circuit_final.zkey"   # H at M = 1
    return keys + ([rc] if rc.exists() else [])


@pytest.mark.parametrize("plain", [False, True])
def test_the_estimate_is_the_loaded_keys_memory(plain):
    from zktensor.groth16.key import PLAIN
    from zktensor.groth16.prover import Prover
    from zktensor.serve.footprint import resident_bytes
    for path in _real_keys():
        p = Prover(path, device="cpu", checkpoint=PLAIN if plain else None, table_cache=False)
        try:
            assert resident_bytes(path, "cpu", plain) == p.memory_bytes(), (path, plain, p.checkpoints)
        finally:
            p.close()


def test_no_estimate_for_a_file_that_is_not_a_key(tmp_path):
    from zktensor.groth16.formats import FormatError
    from zktensor.serve.footprint import resident_bytes
    (tmp_path / "x.zkey").write_bytes(b"zkey" + bytes(20))
    with pytest.raises(FormatError):
        resident_bytes(tmp_path / "x.zkey", "cpu")
