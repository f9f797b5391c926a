"""An on-disk cache of a proving key's prepared tables, memory-mapped on later loads.

Preparing a key's bases (decoding and checking every point, the GZKP doublings, the
table layout the MSM reads) is most of loading a key; its result depends only on the
.zkey's bytes, the tables' specs (group, sizes, MSM config, checkpoint) and the code
that lays tables out. The same holds for the blinding's fixed-base tables (`FixedBase`,
from the key's header points). So the tables are written once, under

    <cache root>/tables/<key>/          key = sha256(.zkey sha256, layout fingerprint, specs, device kind)
        meta.json                       every table's scalar attributes, its tensors' files,
                                        dtypes, shapes and crc32 per 64 MiB
        <table>.<attr>.bin              one tensor's bytes

and later loads map the files (copy-on-write: nothing writes the tables, so the pages
stay the page cache's, shared by every process proving with the key). The layout
fingerprint hashes LAYOUT_VERSION and the source of the MSM modules that decide the
layout, so a change there misses instead of handing the MSM a table it does not
expect. Every file is checked against meta.json's sizes and crc32 before it is used;
an entry that fails (truncated, flipped bits, unreadable meta) is reported on stderr,
removed and rebuilt. A file that passed is remembered in the entry's `checked` with its
identity (device, inode, size, modification and change times), and while that identity
holds later loads check only the sizes, not reading every byte of the tables again
(the timings are in the commit that made it so). Any change made through the file system gives the file a new change
time, which no user can set back, so a changed file is checked in full again; what this
gives up is catching a medium that corrupts a file beneath the file system after its
first full check. Entries are written to a temporary directory and renamed into
place: a reader never sees half of one. Storing an entry removes the key's entries laid
out by other code (reported) and keeps a few of its other specs (the CLI's plain tables
and the service's weighted ones live side by side), the most recently loaded first.

Host code without torch writes entries too (`store_arrays`): `numpy_tables` stores a new
key's plain rows for the prover without torch, under specs of their own, which the
tensor prover's lookups never match.

``ZKTENSOR_TABLE_CACHE=off`` turns the cache off; ``ZKTENSOR_TABLE_CACHE_DIR`` puts it elsewhere. The tables the cache holds were
decoded and checked (on the curve) when they were built; `meta.json`'s ``validated``
records that, with anything else a validation step adds, so a mapped key is not
checked again.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..runtime.atomic import publish_dir

LAYOUT_VERSION = 2
CHUNK = 64 << 20
_PKG = Path(__file__).resolve().parent.parent
_LAYOUT_SOURCES = ("ops/msm", "kernels/msm_tree.py", "kernels/cpu_gather.py",
                   "groth16/fixed_base.py", "groth16/table_cache.py", "groth16/numpy_tables.py")
_NP_DTYPES = {"int32": "<i4", "bool": "|b1", "int64": "<i8", "uint8": "|u1"}
_DTYPES = {f"torch.{k}": v for k, v in _NP_DTYPES.items()}


class CacheCorrupt(ValueError):
    pass


def enabled() -> bool:
    return os.environ.get("ZKTENSOR_TABLE_CACHE", "on").lower() not in ("off", "0", "no")


def cache_dir() -> Path:
    """<cache root>/tables, or ZKTENSOR_TABLE_CACHE_DIR (tables apart from the kernels)."""
    from ..runtime.cache import cache_root
    return Path(os.environ.get("ZKTENSOR_TABLE_CACHE_DIR") or cache_root() / "tables")


@functools.lru_cache(maxsize=1)
def layout_fingerprint() -> str:
    h = hashlib.sha256(f"layout {LAYOUT_VERSION}".encode())
    for rel in _LAYOUT_SOURCES:
        p = _PKG / rel
        for f in (sorted(p.rglob("*.py")) if p.is_dir() else [p] if p.exists() else []):
            h.update(str(f.relative_to(_PKG)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def entry_key(zkey_digest: str, specs: dict, device, target: str | None = None) -> str:
    """The entry of a key's tables: the .zkey's content, the layout code, the tables' specs,
    the device kind and the target that runs there (on CPU tensors the Triton target keeps
    other tables than the CPU target: the two must not share an entry)."""
    kind, target = _where(device, target)
    text = json.dumps([zkey_digest, layout_fingerprint(), specs, kind, target], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _where(device, target: str | None = None) -> tuple[str, str]:
    """(device kind, target) of the tables: part of an entry's key, and of its meta.json. The
    target is the configured one unless given (host code without torch lays out for the CPU
    target whatever the configuration says)."""
    kind = str(getattr(device, "type", device)).split(":")[0]
    if target is None:
        from ..runtime.target import choose
        target = choose(kind)[1]
    return kind, target


def remembered_digest(path) -> str:
    """sha256 of a file's bytes (a .zkey, a .r1cs), remembered under the file's identity
    (`key_check.file_identity`: path, inode, size, modification and change times) in
    <cache root>/digests, so that a key loaded again is not read through."""
    from ..runtime.atomic import atomic_write
    from ..runtime.cache import cache_root
    from .key_check import file_identity
    before = file_identity(path)
    memo = cache_root() / "digests" / f"{before}.sha256"
    try:
        got = memo.read_text().strip()
        if len(got) == 64:
            return got
    except OSError:
        pass
    digest = file_digest(path)
    if file_identity(path) == before:           # not remembered for a file that changed meanwhile
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(memo, "w", encoding="utf-8") as f:
                f.write(digest + "\n")
        except OSError:
            pass                                # a read-only cache only loses the memory
    return digest


def file_digest(path) -> str:
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(16 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


# -- MSMBases <-> files --------------------------------------------------------------------------


def _kinds():
    from ..ops.msm import MSMBases
    from .fixed_base import FixedBase
    return {"MSMBases": MSMBases, "FixedBase": FixedBase}


def _split(bases) -> tuple[dict, dict]:
    """A table's attributes (an MSMBases or a FixedBase) as (JSON-able scalars, tensors);
    ValueError for an attribute of a kind this cache does not know (a new one: better a miss
    than a wrong table). A PointTensor goes as its data tensor, named "<attr>@points"."""
    import torch
    from ..ops.msm import MSMConfig
    from ..points import PointTensor
    if type(bases).__name__ not in _kinds():
        raise ValueError(f"a {type(bases).__name__}")
    scalars, tensors = {"__kind__": type(bases).__name__}, {}
    for k, v in vars(bases).items():
        if isinstance(v, PointTensor):
            k, v = f"{k}@points", v.data
        if isinstance(v, torch.Tensor):
            if str(v.dtype) not in _DTYPES:
                raise ValueError(f"MSMBases.{k}: dtype {v.dtype}")
            tensors[k] = v
        elif isinstance(v, MSMConfig):
            scalars[k] = {"MSMConfig": asdict(v)}
        elif k == "G":
            scalars[k] = {"group": v.name}
        elif isinstance(v, torch.device):
            scalars[k] = {"device": str(v)}
        elif v is None or isinstance(v, (bool, int, str, float)):
            scalars[k] = v if not isinstance(v, int) or isinstance(v, bool) else {"int": str(v)}
        else:
            raise ValueError(f"MSMBases.{k}: {type(v).__name__}")
    return scalars, tensors


def _scalar(v, device):
    import torch
    from ..ops.msm import MSMConfig
    from ..points import group
    if isinstance(v, dict):
        if "MSMConfig" in v:
            return MSMConfig(**v["MSMConfig"])
        if "group" in v:
            return group(v["group"])
        if "device" in v:
            return torch.device(device)
        if "int" in v:
            return int(v["int"])
    return v


def _crcs(mm) -> list[int]:
    """crc32 of every CHUNK bytes (zlib drops the GIL: the chunks go two at a time)."""
    view = memoryview(mm).cast("B")
    parts = [view[i:i + CHUNK] for i in range(0, len(view), CHUNK)] or [view]
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as ex:
        return list(ex.map(zlib.crc32, parts))


def store(zkey_digest: str, specs: dict, tables: dict, device, validated: dict | None = None) -> Path | None:
    """Write `tables` ({name: MSMBases or None}) as the entry for (zkey, specs); its path, or
    None when a table has an attribute this cache cannot store."""
    from ..runtime import compile_shards
    if compile_shards.active():         # a compile pass's tables are not the key's
        return None
    final = cache_dir() / entry_key(zkey_digest, specs, device)
    if (final / "meta.json").exists():
        return final
    try:
        parts = {name: (_split(b) if b is not None else None) for name, b in tables.items()}
    except ValueError as e:
        print(f"zktensor: table cache: not stored ({e})", file=sys.stderr)
        return None
    arrays = {name: None if part is None else
              (part[0], {attr: t.detach().cpu().numpy() for attr, t in part[1].items()})
              for name, part in parts.items()}
    return store_arrays(zkey_digest, specs, arrays, device, validated)


def store_arrays(zkey_digest: str, specs: dict, tables: dict, device, validated: dict | None = None,
                 target: str | None = None) -> Path:
    """Write the entry for (zkey, specs) from tables as they are stored: {name: (scalar
    attributes, {attr: numpy array}) or None} (`store`'s, or those of host code without
    torch, `numpy_tables`); its path."""
    key = entry_key(zkey_digest, specs, device, target)
    root = cache_dir()
    final = root / key
    if (final / "meta.json").exists():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=root))
    try:
        kind, target = _where(device, target)
        meta = {"zkey_sha256": zkey_digest, "layout": layout_fingerprint(), "specs": specs,
                "device": kind, "target": target, "validated": validated or {}, "tables": {}}
        for name, part in tables.items():
            if part is None:
                meta["tables"][name] = None
                continue
            scalars, arrays = part
            files = {}
            for attr, a in arrays.items():
                a = np.ascontiguousarray(a)
                fname = f"{name}.{attr}.bin"
                a.tofile(tmp / fname)
                files[attr] = {"file": fname, "dtype": _NP_DTYPES[str(a.dtype)], "shape": list(a.shape),
                               "bytes": a.nbytes, "crc32": _crcs(a) if a.nbytes else []}
            meta["tables"][name] = {"scalars": scalars, "tensors": files}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        for f in tmp.iterdir():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        publish_dir(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _prune(root, zkey_digest, keep=key)
    return final


def announce_build(path):
    """Say on stderr (`runtime.cache.first_use_note`) that the tables of the key at `path` are
    being made for this cache; the returned done(stored) says so again with the time taken."""
    import time
    from ..runtime.cache import first_use_note
    first_use_note(f"preparing the MSM tables of {os.path.basename(path)} (once per key: stored in "
                   f"{cache_dir()}, where later proofs and `zktensor serve` map them)")
    t0 = time.perf_counter()

    def done(stored: bool = True) -> None:
        first_use_note(f"prepared and {'stored' if stored else 'could not store'} the tables in "
                       f"{time.perf_counter() - t0:.1f} s")
    return done


KEEP_PER_KEY = 4


def _prune(root: Path, zkey_digest: str, keep: str) -> None:
    """Remove the key's entries that a new entry supersedes: those of another layout (code
    that lays tables out differently: stale, reported on stderr) and, of those with other
    specs (the CLI's plain tables beside the service's weighted ones, another device), all
    but the KEEP_PER_KEY - 1 most recently used. Entries of other keys are left alone."""
    same_layout = []
    for d, meta in _entries(root, zkey_digest):
        if d.name == keep:
            continue
        if meta.get("layout") != layout_fingerprint():
            print(f"zktensor: table cache entry {d} was laid out by other code (layout "
                  f"{meta.get('layout')}); removing it", file=sys.stderr)
            shutil.rmtree(d, ignore_errors=True)
        else:
            same_layout.append(d)
    same_layout.sort(key=_last_used, reverse=True)
    for d in same_layout[KEEP_PER_KEY - 1:]:
        shutil.rmtree(d, ignore_errors=True)


def _entries(root: Path, zkey_digest: str) -> list[tuple[Path, dict]]:
    """(entry, its meta.json) of every readable entry of the key under root."""
    out = []
    for d in root.iterdir():
        if d.name.startswith("."):
            continue
        try:
            meta = _meta(d)
        except (OSError, ValueError):
            continue
        if meta.get("zkey_sha256") == zkey_digest:
            out.append((d, meta))
    return out


def _last_used(d: Path) -> float:
    """When the entry was last loaded (its `used` stamp) or else written."""
    for name in ("used", "meta.json"):
        try:
            return os.path.getmtime(d / name)
        except OSError:
            continue
    return 0.0


def _touch_used(d: Path) -> None:
    try:
        (d / "used").touch()
    except OSError:
        pass  # a read-only cache still serves; only the pruning order loses its hint


def load(zkey_digest: str, specs: dict, device) -> tuple[dict, dict] | None:
    """({name: MSMBases or None}, validated) from the entry for (zkey, specs), mapped; None on
    a miss. A corrupt entry is reported, removed, and a miss."""
    key = entry_key(zkey_digest, specs, device)
    d = cache_dir() / key
    if not (d / "meta.json").exists():
        return None
    try:
        out = _load(d, zkey_digest, specs, device)
        _touch_used(d)
        return out
    except (CacheCorrupt, OSError, ValueError, KeyError, TypeError) as e:
        print(f"zktensor: table cache entry {d} is corrupt ({e}); rebuilding it", file=sys.stderr)
        shutil.rmtree(d, ignore_errors=True)
        return None


def _checked(d: Path) -> dict:
    """{file: `key_check.file_identity`} of the entry's files whose crc32 passed as they
    are (`checked`)."""
    try:
        got = json.loads((d / "checked").read_text())
        return got if isinstance(got, dict) else {}
    except (OSError, ValueError):
        return {}


def _remember_checked(d: Path, files: dict) -> None:
    from ..runtime.atomic import atomic_write
    try:
        with atomic_write(d / "checked", "w", encoding="utf-8") as f:
            json.dump(files, f)
    except OSError:
        pass                                    # a read-only cache checks in full every time


def _load(d: Path, zkey_digest: str, specs: dict, device):
    import torch
    from ..points import PointTensor
    kinds = _kinds()
    meta = _meta(d)
    if meta.get("zkey_sha256") != zkey_digest or meta.get("layout") != layout_fingerprint() or \
            meta.get("specs") != json.loads(json.dumps(specs)):
        raise CacheCorrupt("its meta.json names another key, layout or specs")
    dev = torch.device(device)
    out = {}
    for name, (scalars, arrays) in _map_files(d, meta).items():
        if scalars is None:
            out[name] = None
            continue
        cls = kinds[scalars.pop("__kind__")]
        b = cls.__new__(cls)
        for k, v in scalars.items():
            setattr(b, k, _scalar(v, dev))
        for attr, a in arrays.items():
            tensor = torch.from_numpy(a)
            tensor = tensor if dev.type == "cpu" else tensor.to(dev)
            if attr.endswith("@points"):
                attr, tensor = attr[:-len("@points")], PointTensor(b.G, tensor)
            setattr(b, attr, tensor)
        out[name] = b
    return out, meta.get("validated", {})


def _meta(d: Path) -> dict:
    return json.loads((d / "meta.json").read_text())


def _map_files(d: Path, meta: dict) -> dict:
    """{table: (its scalar attributes as stored, {attr: mapped array})} of an entry (None,
    None for an empty table), every file checked against meta.json (sizes; crc32 unless
    remembered in `checked` under the file's identity); CacheCorrupt where one fails."""
    from .key_check import file_identity
    checked, passed = _checked(d), {}
    out = {}
    for name, t in meta["tables"].items():
        if t is None:
            out[name] = (None, None)
            continue
        arrays = {}
        for attr, f in t["tensors"].items():
            path = d / f["file"]
            ident, size = file_identity(path), os.path.getsize(path)
            if size != f["bytes"]:
                raise CacheCorrupt(f"{f['file']}: {size} bytes, meta.json says {f['bytes']}")
            if size:
                a = np.memmap(path, dtype=np.dtype(f["dtype"]), mode="c", shape=tuple(f["shape"]))
                if checked.get(f["file"]) != ident and _crcs(a) != f["crc32"]:
                    raise CacheCorrupt(f"{f['file']}: checksum mismatch")
                passed[f["file"]] = ident
            else:
                a = np.zeros(tuple(f["shape"]), dtype=np.dtype(f["dtype"]))
            arrays[attr] = a
        out[name] = (dict(t["scalars"]), arrays)
    if passed != checked:
        _remember_checked(d, passed)
    return out


def load_host(zkey_digest: str) -> tuple[dict, dict] | None:
    """The key's tables for host code without torch (`groth16.numpy_prover`): ({table: (the
    stored scalar attributes, {attr: mapped numpy array}) or (None, None)}, the entry's meta)
    of the most recently used entry laid out by this code for the CPU target, or None (no
    such entry). A corrupt entry is reported, removed and skipped, as by `load`."""
    try:
        found = [(d, meta) for d, meta in _entries(cache_dir(), zkey_digest)
                 if meta.get("layout") == layout_fingerprint() and
                 (meta.get("device"), meta.get("target")) == ("cpu", "cpu")]
    except OSError:
        return None
    for d, meta in sorted(found, key=lambda e: _last_used(e[0]), reverse=True):
        try:
            tables = _map_files(d, meta)
        except (CacheCorrupt, OSError, ValueError, KeyError, TypeError) as e:
            print(f"zktensor: table cache entry {d} is corrupt ({e}); removing it", file=sys.stderr)
            shutil.rmtree(d, ignore_errors=True)
            continue
        _touch_used(d)
        return tables, meta
    return None
