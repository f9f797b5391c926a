"""The persisted tuning cache: the winners of `zktensor autotune`.

One JSON file, `~/.cache/zktensor/tune.json` (the kernel cache's root, see
`runtime.cache.cache_root`), or the path in ZKTENSOR_TUNE_CACHE (`off` disables
reading it). Layout:

    {"format": 1, "zktensor_version": "0.1.0",
     "entries": {"<device>|<field>|<op>|<bucket>": {
         "device": "cpu:AMD EPYC 9R14 x2", "field": "bn254.fr", "op": "ntt", "bucket": 4096,
         "version": "0.1.0", "config": {"cpu_rows_log": 6, "cpu_unroll": 4, ...},
         "time_s": 1.2e-3, "default_time_s": 1.5e-3, "complete": true,
         "measured": {"<candidate>": seconds, ...}, "rejected": {"<candidate>": "why"}, ...}}}

- device: `device_name()`: the GPU's name, or the CPU model and the thread count the
  kernels use; field: a field or group name; op: `mul`, `ntt`, `msm`, `msm_prepared`,
  with `.b<k>` appended for batched work (k: batch rounded up to a power of two);
  bucket: the size rounded up to a power of two.
- Writes are atomic (a temporary file in the same directory, fsync, rename) and merge
  with what is on disk under a lock file, so two tuners, or a tuner and a crash,
  never lose each other's entries.
- A file that is not valid JSON, or was written by another format or zktensor
  version, is reported with a `TuneCacheWarning` and ignored; the next write moves
  it aside to `<name>.corrupt` / `<name>.stale-<version>` first.
- Lookups use the exact bucket, else the nearest tuned bucket within a factor of 4
  (same device, field, op), else nothing (the cost model decides).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import math
import os
import tempfile
import threading
import time
import warnings
import weakref
from pathlib import Path

from ..config import tune_cache_setting
from ..runtime.cache import cache_root
from ..runtime.threads import num_threads
from ..version import __version__

FORMAT = 1
NEAREST_OCTAVES = 2


class TuneCacheWarning(UserWarning):
    """The tuning cache file could not be used (corrupt, stale, unwritable)."""


def version() -> str:
    return __version__


def _env_key() -> tuple:
    e = os.environ
    return e.get("ZKTENSOR_TUNE_CACHE", ""), e.get("ZKTENSOR_CACHE_DIR"), e.get("XDG_CACHE_HOME")


_paths: dict = {}


def cache_path() -> Path | None:
    """Where the cache lives; None when ZKTENSOR_TUNE_CACHE=off."""
    key = _env_key()
    if key in _paths:
        return _paths[key]
    setting = tune_cache_setting()
    if setting is None:
        path = None
    elif setting:
        path = Path(os.path.expanduser(setting))
    else:
        path = cache_root() / "tune.json"
    _paths[key] = path
    return path


def bucket(size: int) -> int:
    """The power of two at or above size (1 for size <= 1)."""
    size = int(size)
    return 1 if size <= 1 else 1 << (size - 1).bit_length()


def op_key(op: str, batch: int = 1) -> str:
    return op if batch <= 1 else f"{op}.b{bucket(batch)}"


def entry_key(device: str, field: str, op: str, size_bucket: int) -> str:
    return f"{device}|{field}|{op}|{size_bucket}"


@functools.lru_cache(maxsize=8)
def _cuda_name(index: int) -> str:
    import torch
    return torch.cuda.get_device_name(index)


@functools.lru_cache(maxsize=1)
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.split(":")[0].strip() in ("model name", "Model", "cpu model"):
                    return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    import platform
    return platform.processor() or platform.machine() or "cpu"


_devices: dict = {}


def device_name(device=None) -> str:
    """The cache's device key: `cuda:<GPU name>` or `cpu:<model> x<threads>` (the thread
    count the CPU kernels use, ZKTENSOR_NUM_THREADS or the affinity mask; looked at again
    at most once a second)."""
    k = str(device)
    hit = _devices.get(k)
    now = time.monotonic()
    if hit is not None and now < hit[1]:
        return hit[0]
    name = _device_name(device)
    _devices[k] = (name, now + RECHECK_S)
    return name


def _device_name(device) -> str:
    if str(getattr(device, "type", device) or "cpu") == "cpu":     # host arrays: no torch needed
        return f"cpu:{_cpu_model()} x{num_threads()}"
    import torch
    dev = torch.device(device if device is not None else "cpu")
    if dev.type == "cuda":
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        return f"cuda:{_cuda_name(idx)}"
    return f"cpu:{_cpu_model()} x{num_threads()}"


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


RECHECK_S = 1.0      # how often a reader looks at the file for changes by other processes
_instances: "weakref.WeakSet[TuneCache]" = weakref.WeakSet()


class TuneCache:
    """The entries of one cache file, loaded lazily, reloaded when the file changes (looked at
    no more than once a second; a write by any TuneCache of this process is seen at once)."""

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path is not None else None
        self.entries: dict[str, dict] = {}
        self.problem: str | None = None     # why the file on disk was ignored
        self._stamp = None
        self._next_check = 0.0
        self._lock = threading.RLock()
        self._index: dict | None = None
        _instances.add(self)

    # -- reading -----------------------------------------------------------------------
    def _file_stamp(self):
        try:
            st = self.path.stat()
            return (st.st_mtime_ns, st.st_size, st.st_ino)
        except (OSError, AttributeError):
            return None

    def refresh(self, force: bool = False) -> "TuneCache":
        """(Re)load the file if it changed since the last load."""
        now = time.monotonic()
        if not force and now < self._next_check:
            return self
        with self._lock:
            self._next_check = now + RECHECK_S
            stamp = self._file_stamp()
            if not force and stamp == self._stamp and (stamp is not None or not self.entries):
                return self
            self._stamp = stamp
            self.entries, self.problem = self._read()
            self._index = None
            if self.problem:
                warnings.warn(f"zktensor: ignoring the tuning cache {self.path}: {self.problem}",
                              TuneCacheWarning, stacklevel=3)
            return self

    def _read(self) -> tuple[dict, str | None]:
        if self.path is None or not self.path.exists():
            return {}, None
        try:
            doc = json.loads(self.path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            return {}, f"not a readable JSON file ({e})"
        if not isinstance(doc, dict) or not isinstance(doc.get("entries"), dict):
            return {}, "not a tuning cache (no 'entries' object)"
        if doc.get("format") != FORMAT:
            return {}, f"format {doc.get('format')!r}, expected {FORMAT}"
        if doc.get("zktensor_version") != version():
            return {}, (f"written by zktensor {doc.get('zktensor_version')!r}, this is {version()}: "
                        "stale (run `zktensor autotune` again)")
        entries = {k: v for k, v in doc["entries"].items()
                   if isinstance(v, dict) and isinstance(v.get("config"), dict)}
        return entries, None

    def _bucket_index(self) -> dict:
        if self._index is None:
            idx: dict = {}
            for e in self.entries.values():
                try:
                    idx.setdefault((e["device"], e["field"], e["op"]), []).append(int(e["bucket"]))
                except (KeyError, TypeError, ValueError):
                    continue
            self._index = idx
        return self._index

    def get(self, device: str, field: str, op: str, size_bucket: int) -> dict | None:
        return self.entries.get(entry_key(device, field, op, size_bucket))

    def lookup(self, op: str, field: str, size: int, device=None, batch: int = 1,
               device_key: str | None = None) -> dict | None:
        """The tuned config (a dict of fields) for op/field/size on device (or the cache's
        device_key), or None. A batched op falls back to the unbatched entry; a missing bucket
        to the nearest tuned one within a factor of 4."""
        self.refresh()
        if not self.entries:
            return None
        dev = device_key or device_name(device)
        b = bucket(size)
        for o in dict.fromkeys((op_key(op, batch), op)):
            e = self.get(dev, field, o, b)
            if e is None:
                near = [x for x in self._bucket_index().get((dev, field, o), ())
                        if abs(math.log2(x) - math.log2(b)) <= NEAREST_OCTAVES]
                if near:
                    best = min(near, key=lambda x: (abs(math.log2(x) - math.log2(b)), -x))
                    e = self.get(dev, field, o, best)
            if e is not None:
                return dict(e["config"])
        return None

    # -- writing -----------------------------------------------------------------------
    @contextlib.contextmanager
    def _file_lock(self):
        lock = self.path.with_name(self.path.name + ".lock")
        with open(lock, "a+") as fh:
            try:
                import fcntl
                fcntl.flock(fh, fcntl.LOCK_EX)
            except (ImportError, OSError):  # pragma: no cover - no flock: best effort
                pass
            yield

    def put(self, entry: dict) -> None:
        """Add or replace one entry and write the file atomically (merged with the entries
        other processes wrote meanwhile)."""
        if self.path is None:
            raise RuntimeError("the tuning cache is disabled (ZKTENSOR_TUNE_CACHE=off)")
        entry = dict(entry)
        entry.setdefault("version", version())
        entry["updated"] = _now()
        key = entry_key(entry["device"], entry["field"], entry["op"], int(entry["bucket"]))
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._file_lock():
                disk, problem = self._read()
                if problem:
                    self._move_aside(problem)
                disk[key] = entry
                self._write(disk)
                self.entries, self.problem = disk, None
                self._stamp = self._file_stamp()
                self._index = None
        self._written()

    def remove(self, predicate) -> int:
        """Drop the entries for which predicate(entry) is true; returns how many."""
        with self._lock, self._file_lock():
            disk, problem = self._read()
            if problem:
                self._move_aside(problem)
            keep = {k: v for k, v in disk.items() if not predicate(v)}
            self._write(keep)
            n = len(disk) - len(keep)
            self.entries, self.problem, self._index = keep, None, None
            self._stamp = self._file_stamp()
        self._written()
        return n

    def _written(self) -> None:
        """Let every other TuneCache of this file in this process look at it again."""
        for c in list(_instances):
            if c is not self and c.path == self.path:
                c._next_check = 0.0

    def _move_aside(self, problem: str) -> Path | None:
        if not self.path.exists():
            return None
        suffix = ".corrupt" if "JSON" in problem or "not a tuning" in problem else ".stale"
        if suffix == ".stale" and "written by zktensor" in problem:
            try:
                old = json.loads(self.path.read_text()).get("zktensor_version")
                suffix += f"-{old}"
            except Exception:
                pass
        dest = self.path.with_name(self.path.name + suffix)
        n = 1
        while dest.exists():
            dest = self.path.with_name(f"{self.path.name}{suffix}.{n}")
            n += 1
        os.replace(self.path, dest)
        warnings.warn(f"zktensor: the tuning cache {self.path} ({problem}) was moved to {dest}; "
                      "starting a new one", TuneCacheWarning, stacklevel=4)
        return dest

    def _write(self, entries: dict) -> None:
        doc = {"format": FORMAT, "zktensor_version": version(),
               "entries": dict(sorted(entries.items()))}
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, indent=1, sort_keys=False)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


_caches: dict = {}
_caches_lock = threading.Lock()


_current: dict = {"cache": None, "until": 0.0}


def default_cache() -> TuneCache:
    """The process-wide cache object for `cache_path()` (one per path; its path is None when
    the cache is off). The environment is looked at again at most once a second (the ops call
    this for every kernel launch) or after `clear_memory()`."""
    now = time.monotonic()
    c = _current["cache"]
    if c is not None and now < _current["until"]:
        return c
    key = _env_key()
    c = _caches.get(key)
    if c is None:
        path = cache_path()
        with _caches_lock:
            c = next((x for x in _caches.values() if x.path == path), None) or TuneCache(path)
            _caches[key] = c
    _current.update(cache=c, until=now + RECHECK_S)
    return c


def clear_memory() -> None:
    """Forget the loaded caches (tests; another process rewrote the file)."""
    with _caches_lock:
        _caches.clear()
        _paths.clear()
        _devices.clear()
        _current.update(cache=None, until=0.0)
