"""Residency: keys by content, one load per key however many ask, LRU eviction within the
budget that never drops a key in use (a fake loader: no torch, no key files needed)."""
from __future__ import annotations

import threading
import time

from zktensor.serve.residency import Residency


class FakeProver:
    def __init__(self, path, size):
        self.path, self.size, self.closed = path, size, False

    def memory_bytes(self):
        return self.size

    def close(self):
        self.closed = True


def residency(budget, sizes, delay=0.0):
    loads = []

    def load(path):
        loads.append(path)
        time.sleep(delay)
        return FakeProver(path, sizes[path.rsplit("/", 1)[-1]]), "built"
    return Residency(budget, load), loads


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
