"""Keys kept resident by the service: loaded on first use, evicted least recently used.

A key is known by its content (sha256 of the .zkey), so a file rewritten in place is a
new key and two paths to one file are one key; the digest of a path is recomputed only
when its size, mtime or inode change. Loading happens once however many clients ask for
the key at the same time (the others wait); proofs with one key run one at a time (a
Prover is not re-entrant), proofs with different keys side by side.

Eviction, least recently used first, happens twice: before a load, for the new key's
estimated size (`footprint.resident_bytes`, from the .zkey header), so that the resident
keys, the keys being loaded and the new one fit the budget while it loads; and after
it, for its real size. A key in use is never evicted, and the newest key stays even
alone over the budget.
"""
from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field


class _Digests:
    """sha256 of files, remembered per `key_check.file_identity` here and across processes
    (`table_cache.remembered_digest`)."""

    def __init__(self):
        self._memo: dict[str, tuple[tuple, str]] = {}
        self._lock = threading.Lock()

    def __call__(self, path: str) -> str:
        from ..groth16.key_check import file_identity
        sig = file_identity(path)
        with self._lock:
            got = self._memo.get(path)
        if got and got[0] == sig:
            return got[1]
        from ..groth16.table_cache import remembered_digest
        d = remembered_digest(path)
        with self._lock:
            self._memo[path] = (sig, d)
        return d


@dataclass
class Resident:
    path: str
    digest: str
    prover: object
    bytes: int
    load_s: float
    tables: str = "built"              # "built", "mapped" (from the table cache)
    lock: threading.Lock = field(default_factory=threading.Lock)
    busy: int = 0
    proofs: int = 0
    last_used: float = field(default_factory=time.monotonic)
    r1cs: OrderedDict = field(default_factory=OrderedDict)   # digest -> the Prover's R1CSCheck

    def r1cs_check(self, path: str | None, digests) -> object | None:
        """The witness check against `path` (loaded once per .r1cs content; two kept)."""
        if path is None:
            return None
        d = digests(path)
        if d not in self.r1cs:
            self.r1cs[d] = self.prover._load_r1cs(path)
            while len(self.r1cs) > 2:
                self.r1cs.popitem(last=False)
        self.r1cs.move_to_end(d)
        return self.r1cs[d]


class Residency:
    def __init__(self, budget_bytes: int, load, estimate=None):
        """load(path) -> (Prover, how its tables came: "built" or "mapped"); estimate(path) ->
        the bytes it will hold, or None (unknown: no eviction before the load)."""
        self.budget = budget_bytes
        self._load = load
        self._estimate = estimate
        self._keys: OrderedDict[str, Resident] = OrderedDict()
        self._loading: dict[str, threading.Lock] = {}
        self._reserved: dict[str, int] = {}          # digest -> estimated bytes of a load under way
        self._lock = threading.Lock()
        self.digests = _Digests()
        self.evicted = 0

    def acquire(self, path: str) -> tuple[Resident, bool]:
        """The resident key for the .zkey at `path` (loaded if need be) marked busy, and
        whether it was resident already; `release` it after use."""
        path = os.path.realpath(path)
        digest = self.digests(path)
        with self._lock:
            r = self._keys.get(digest)
            if r is not None:
                r.busy += 1
                self._keys.move_to_end(digest)
                return r, True
            gate = self._loading.setdefault(digest, threading.Lock())
        with gate:                          # one load per key; others wait for it here
            with self._lock:
                r = self._keys.get(digest)
                if r is not None:
                    r.busy += 1
                    self._keys.move_to_end(digest)
                    return r, True
            need = self._estimated(path)
            with self._lock:
                self._reserved[digest] = need
                self._evict(keep=None)      # room for the new key before it takes memory
            t = time.perf_counter()
            try:
                prover, tables = self._load(path)
            finally:
                with self._lock:
                    self._loading.pop(digest, None)
                    self._reserved.pop(digest, None)
            r = Resident(path, digest, prover, prover.memory_bytes(), time.perf_counter() - t, tables)
            with self._lock:
                r.busy += 1
                self._keys[digest] = r
                self._evict(keep=digest)
            return r, False

    def _estimated(self, path: str) -> int:
        if self._estimate is None:
            return 0
        try:
            return int(self._estimate(path) or 0)
        except Exception:  # noqa: BLE001 - no estimate; the load reports what is wrong with the file
            return 0

    def release(self, r: Resident) -> None:
        with self._lock:
            r.busy -= 1
            r.last_used = time.monotonic()

    def _evict(self, keep: str | None) -> None:
        """Drop idle keys, least recently used first, until the resident keys and the loads
        under way fit the budget (caller holds the lock)."""
        total = sum(r.bytes for r in self._keys.values()) + sum(self._reserved.values())
        for digest in list(self._keys):
            if total <= self.budget:
                return
            r = self._keys[digest]
            if digest == keep or r.busy:
                continue
            del self._keys[digest]
            total -= r.bytes
            self.evicted += 1
            r.prover.close()

    def keys(self) -> list[Resident]:
        with self._lock:
            return list(self._keys.values())

    def resident_bytes(self) -> int:
        return sum(r.bytes for r in self.keys())

    def reserved_bytes(self) -> int:
        """Estimated bytes of the keys being loaded now."""
        with self._lock:
            return sum(self._reserved.values())

    def close(self) -> None:
        with self._lock:
            for r in self._keys.values():
                r.prover.close()
            self._keys.clear()
