"""Shared benchmark infrastructure: timer, machine description, results writer.

Every benchmark script in ``bench/`` uses this module so that zktensor's own
figures are taken the same way as the peer programs' (``bench/peers/``):

* :func:`time_runs` -- one warm-up run, then ``runs`` timed runs; a run during
  which *other* processes used more than 3% of the machine's cores (read from
  ``/proc/stat`` around the run) is discarded and repeated, up to ``4 * runs``
  attempts.  The median is the upper median ``sorted(v)[len(v) // 2]``, exactly
  as the arkworks and gnark-crypto peer programs compute it.
* :func:`time_alternating` -- the same for several callables taken in turns
  (A B, B A, ...), for a ratio that the machine's drift cannot tilt.
* :func:`machine_info` -- CPU model, cores, ISA flags, memory, OS, Python /
  torch / triton versions, GPU (only when ``torch.cuda.is_available()``), git
  commit.
* :func:`make_row` / :func:`write_results` -- one row per measurement, written
  to ``bench/results/<name>.json`` and ``<name>.csv``.  Files written on a
  machine with a GPU go to ``bench/results/gpu/``; a row whose ``target`` is a
  GPU is refused unless a GPU is present.

Set ``ZKTENSOR_RESULTS_DIR`` to write somewhere else (e.g. ``$OUT/results`` on
a device machine).
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import platform
import resource
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent

#: Fields every results row has, in CSV column order.
ROW_FIELDS = (
    "system",
    "version",
    "op",
    "field_or_curve",
    "size",
    "threads",
    "strategy",
    "target",
    "median_s",
    "min_s",
    "runs",
    "unit_value",
    "unit",
    "extra",
)

#: Targets that mean "ran on a GPU".  Anything else starting with "cpu" is CPU.
GPU_TARGETS = ("cuda", "gpu", "rocm", "hip")

# ---------------------------------------------------------------------------
# Timer
# ---------------------------------------------------------------------------

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _machine_busy_s() -> float | None:
    """Seconds of CPU the whole machine spent busy, from the first line of
    /proc/stat: user + nice + system + irq + softirq + steal (as the peers)."""
    try:
        with open("/proc/stat", "rb") as f:
            first = f.readline().split()
    except OSError:
        return None
    v = [int(x) for x in first[1:9]] + [0] * 8
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / _CLK_TCK


def _self_cpu_s() -> float:
    """User + system CPU seconds of this process (all its threads) and of its descendants,
    live (the prover's MSM helper, a `zktensor serve` started by the bench and the service's
    own helper) or ended: work done for the run is not disturbance."""
    ru, rc = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime + rc.ru_utime + rc.ru_stime + _descendants_cpu_s("self")


def _descendants_cpu_s(pid) -> float:
    """utime + stime of the live descendants of `pid`, each with its own ended and waited
    children (cutime, cstime), from /proc (0 where it is not there)."""
    total, todo, seen = 0, [str(pid)], set()
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as f:
                    kids = f.read().split()
            except OSError:
                continue
            for kid in kids:
                if kid in seen:
                    continue
                seen.add(kid)
                try:
                    with open(f"/proc/{kid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                # utime, stime, cutime, cstime: fields 14-17 of stat
                total += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
                todo.append(kid)
    return total / _CLK_TCK


def cpu_cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass
class Timing:
    """Result of :func:`time_runs`.  Times are seconds per call of ``fn``."""

    median_s: float
    min_s: float
    clean: int  # runs kept
    tried: int  # runs made (excluding warm-up)
    times_s: list[float] = field(default_factory=list)  # kept runs, in order
    all_s: list[float] = field(default_factory=list)  # every timed run
    kept: list[bool] = field(default_factory=list)  # per timed run: clean (in times_s)

    @property
    def extra(self) -> str:
        """The peers' ``clean k/n runs`` note."""
        return f"clean {self.clean}/{self.tried} runs"


def cuda_sync() -> None:
    """``torch.cuda.synchronize()`` if torch is imported and CUDA is available."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()


def time_runs(
    fn: Callable[[], Any],
    runs: int = 5,
    *,
    number: int = 1,
    warmup: int = 1,
    sync: Callable[[], Any] | None = None,
    max_foreign: float = 0.03,
    min_allowed_s: float = 0.020,
    cores: int | None = None,
    max_tries_factor: int = 4,
) -> Timing:
    """Time ``fn`` the way the peer programs do.

    ``warmup`` untimed calls, then timed runs until ``runs`` clean ones were
    taken or ``max_tries_factor * runs`` were tried.  Each timed run calls
    ``fn`` ``number`` times (times are divided by ``number``) and is bracketed
    by ``sync()`` (pass :func:`cuda_sync` for GPU work).  A run is *clean* when
    the CPU time other processes used during it, measured as (machine busy time
    from /proc/stat) - (this process's CPU time), is at most
    ``max(max_foreign * wall * cores, min_allowed_s)`` -- 3% of the cores, and
    at least 20 ms because /proc/stat counts in 10 ms ticks (the peers' rule).
    If no run was clean, the statistics use all runs (``clean == 0`` says so).
    """
    if runs < 1 or number < 1:
        raise ValueError("runs and number must be >= 1")
    ncores = cores or cpu_cores()
    for _ in range(warmup):
        for _ in range(number):
            fn()
        if sync is not None:
            sync()
    clean: list[float] = []
    every: list[float] = []
    kept: list[bool] = []
    tried = 0
    while len(clean) < runs and tried < max_tries_factor * runs:
        tried += 1
        if sync is not None:
            sync()
        b0, s0 = _machine_busy_s(), _self_cpu_s()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if sync is not None:
            sync()
        wall = time.perf_counter() - t0
        b1, s1 = _machine_busy_s(), _self_cpu_s()
        every.append(wall / number)
        if b0 is None or b1 is None:
            foreign = 0.0  # no /proc/stat: cannot tell, keep the run
        else:
            foreign = (b1 - b0) - (s1 - s0)
        kept.append(foreign <= max(max_foreign * wall * ncores, min_allowed_s))
        if kept[-1]:
            clean.append(wall / number)
    v = sorted(clean if clean else every)
    return Timing(
        median_s=v[len(v) // 2],
        min_s=v[0],
        clean=len(clean),
        tried=tried,
        times_s=clean,
        all_s=every,
        kept=kept,
    )


def time_alternating(fns: list[Callable[[], Any]], runs: int = 5, **kw) -> list[Timing]:
    """Time several callables in turns, one Timing each (in ``fns``' order).

    Each turn calls every fn once, forward on even turns and backward on odd ones
    (A B, B A, ...), so a drift of the machine's speed over the minutes of a run, and
    whatever one call leaves behind for the next, fall on all of them alike: timed one
    after the other in blocks, a peer and zktensor can differ by the drift alone. A
    turn is clean by :func:`time_runs`' rule over the whole turn (``kw``: its keywords,
    no ``number``), so every Timing keeps the same turns and their ``times_s`` line up
    turn by turn (per-turn ratios). ``clean``/``tried`` count turns.
    """
    if "number" in kw:
        raise ValueError("time_alternating: each turn calls each fn once (no number)")
    walls: list[list[float]] = [[] for _ in fns]

    def one_turn():
        forward = len(walls[0]) % 2 == 0          # turns so far, warm-up ones included
        for j in (range(len(fns)) if forward else range(len(fns) - 1, -1, -1)):
            t0 = time.perf_counter()
            fns[j]()
            walls[j].append(time.perf_counter() - t0)

    kw.setdefault("warmup", 0)
    warm = kw["warmup"]
    turns = time_runs(one_turn, runs, **kw)
    out = []
    for w in walls:
        every = w[warm:]                    # the warm-up turns are not timed
        clean = [t for t, k in zip(every, turns.kept) if k]
        v = sorted(clean if clean else every)
        out.append(Timing(median_s=v[len(v) // 2], min_s=v[0], clean=turns.clean, tried=turns.tried,
                          times_s=clean, all_s=every, kept=list(turns.kept)))
    return out


# ---------------------------------------------------------------------------
# Machine description
# ---------------------------------------------------------------------------

#: CPU flags worth recording for field arithmetic.
INTERESTING_FLAGS = (
    "bmi2",
    "adx",
    "avx2",
    "avx512f",
    "avx512dq",
    "avx512vl",
    "avx512bw",
    "avx512ifma",
    "avx512vbmi",
    "avx512_vbmi2",
    "sha_ni",
    "vaes",
    "vpclmulqdq",
    "gfni",
    "asimd",
    "sve",
    "sve2",
)


def _cpuinfo() -> tuple[str, list[str]]:
    model: str | None = None
    flags: list[str] = []
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, val = line.partition(":")
        key = key.strip()
        if key in ("model name", "Model", "cpu model") and model is None:
            model = val.strip()
        elif key in ("flags", "Features") and not flags:
            flags = val.split()
        elif key in ("cpu family", "model") and key not in _CPU_IDS:
            _CPU_IDS[key] = val.strip()
    return model or platform.processor() or platform.machine(), flags


_CPU_IDS: dict[str, str] = {}


def _mem_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _module_version(name: str) -> str | None:
    try:
        mod = __import__(name)
    except Exception:  # noqa: BLE001 - any import failure means "not available"
        return None
    return getattr(mod, "__version__", "unknown")


def gpu_info() -> dict | None:
    """Name and properties of CUDA device 0, or None without a usable GPU."""
    try:
        import torch
    except Exception:  # noqa: BLE001
        return None
    try:
        if not torch.cuda.is_available():
            return None
        p = torch.cuda.get_device_properties(0)
        return {
            "name": p.name,
            "count": torch.cuda.device_count(),
            "capability": f"{p.major}.{p.minor}",
            "memory_bytes": int(p.total_memory),
            "multiprocessors": int(p.multi_processor_count),
            "cuda_runtime": torch.version.cuda,
        }
    except Exception as e:  # noqa: BLE001
        return {"name": None, "error": repr(e)}


def machine_info(*, with_torch: bool = True) -> dict:
    """Describe the machine and software a benchmark ran on.

    ``with_torch=False`` skips importing torch/triton (faster; no GPU field).
    """
    model, flags = _cpuinfo()
    flagset = set(flags)
    commit = _git("rev-parse", "HEAD")
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    info: dict[str, Any] = {
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "cpu_model": model,
        "cpu_family_model": "/".join(_CPU_IDS.get(k, "?") for k in ("cpu family", "model")),
        "cpu_cores": cpu_cores(),
        "cpu_count_os": os.cpu_count(),
        "cpu_flags": [f for f in INTERESTING_FLAGS if f in flagset],
        "virtualized": "hypervisor" in flagset,
        "memory_bytes": _mem_total_bytes(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "numpy": _module_version("numpy"),
        "git_commit": commit,
        "git_dirty": bool(dirty) if dirty is not None else None,
    }
    if with_torch:
        info["torch"] = _module_version("torch")
        info["triton"] = _module_version("triton")
        info["gpu"] = gpu_info()
    return info


def machine_key(machine: Mapping) -> str:
    """A short label identifying the machine (to tell results from different
    machines apart in the report)."""
    gpu = machine.get("gpu") or {}
    s = f"{machine.get('cpu_model', '?')} x{machine.get('cpu_cores', '?')}"
    if gpu.get("name"):
        s += f" + {gpu['name']}"
    host = machine.get("hostname")
    return f"{host}: {s}" if host else s


def machine_summary(machine: Mapping) -> str:
    """One line for humans: CPU, cores, key flags, memory, GPU."""
    mem = machine.get("memory_bytes")
    memtxt = f"{mem / 2**30:.0f} GiB" if mem else "? GiB"
    flags = [f for f in machine.get("cpu_flags", []) if f in ("avx2", "avx512f", "avx512ifma", "adx", "bmi2")]
    gpu = (machine.get("gpu") or {}).get("name")
    parts = [
        f"{machine.get('cpu_model', '?')}, {machine.get('cpu_cores', '?')} cores",
        " ".join(flags) or "no listed flags",
        memtxt,
    ]
    if machine.get("virtualized"):
        parts.append("VM")
    parts.append(f"GPU {gpu}" if gpu else "no GPU")
    return "; ".join(parts)


# ---------------------------------------------------------------------------
# Rows and results files
# ---------------------------------------------------------------------------

#: Default throughput unit per op group (see :func:`op_group`).
UNITS = {
    "fr_mul": "mul/s",
    "fq_mul": "mul/s",
    "fr_add": "add/s",
    "fq_add": "add/s",
    "g1_msm": "points/s",
    "g2_msm": "points/s",
    "fr_fft": "elements/s",
    "fr_ntt": "elements/s",
    "groth16_prove": "proofs/s",
    "interpreter_start": "starts/s",
}

#: Op groups: an op ``<group>`` or ``<group>_<variant>`` is compared with the
#: other ops of its group (e.g. ``fr_mul_array`` and ``fr_mul_vector`` are
#: both ``fr_mul``; ``fr_fft_dif_bitrev`` is ``fr_fft``).
OP_GROUPS = tuple(sorted(UNITS, key=len, reverse=True))


def op_group(op: str) -> str:
    """The comparison group of an op name (longest known prefix, else op)."""
    for g in OP_GROUPS:
        if op == g or op.startswith(g + "_"):
            return g
    return op


def is_gpu_target(target: str) -> bool:
    t = (target or "").lower()
    return any(t.startswith(g) for g in GPU_TARGETS)


def make_row(
    system: str,
    op: str,
    field_or_curve: str,
    size: int,
    threads: int,
    median_s: float,
    min_s: float,
    *,
    strategy: str = "",
    target: str = "cpu",
    unit: str | None = None,
    unit_value: float | None = None,
    runs: int | None = None,
    version: str = "",
    extra: Any = "",
) -> dict:
    """Build one results row.

    ``size`` is the number of work items per timed call (multiplications,
    MSM points, FFT elements, proofs); ``unit_value`` defaults to
    ``size / median_s`` in ``unit`` (default from the op group: mul/s,
    points/s, elements/s, proofs/s).  Pass a :class:`Timing` via
    :func:`row_from_timing` to fill median/min/runs/extra at once.
    """
    if unit is None:
        unit = UNITS.get(op_group(op), "items/s")
    if unit_value is None and median_s and median_s > 0:
        unit_value = size / median_s
    return {
        "system": system,
        "version": version,
        "op": op,
        "field_or_curve": field_or_curve,
        "size": int(size),
        "threads": int(threads),
        "strategy": strategy,
        "target": target,
        "median_s": float(median_s),
        "min_s": float(min_s),
        "runs": runs,
        "unit_value": unit_value,
        "unit": unit,
        "extra": extra,
    }


def row_from_timing(
    system: str,
    op: str,
    field_or_curve: str,
    size: int,
    threads: int,
    timing: Timing,
    **kw: Any,
) -> dict:
    """:func:`make_row` from a :class:`Timing`; ``extra`` gets ``clean k/n runs``."""
    extra = kw.pop("extra", "")
    note = timing.extra if not extra else f"{extra}; {timing.extra}"
    return make_row(
        system, op, field_or_curve, size, threads, timing.median_s, timing.min_s,
        runs=timing.clean, extra=note, **kw,
    )


def default_results_dir() -> Path:
    env = os.environ.get("ZKTENSOR_RESULTS_DIR")
    return Path(env) if env else BENCH_DIR / "results"


def _check_row(row: Mapping) -> dict:
    missing = [k for k in ("system", "op", "field_or_curve", "size", "threads", "median_s", "min_s") if k not in row]
    if missing:
        raise ValueError(f"results row lacks {missing}: {row!r}")
    out = {k: row.get(k, "" if k in ("strategy", "version", "extra", "unit") else None) for k in ROW_FIELDS}
    if not out["target"]:
        out["target"] = "cpu"
    for k, v in row.items():  # keep extra keys the caller added
        out.setdefault(k, v)
    return out


def write_results(
    name: str,
    rows: Iterable[Mapping],
    machine: Mapping | None = None,
    *,
    results_dir: str | os.PathLike | None = None,
    notes: str = "",
) -> Path:
    """Write ``<results_dir>/<name>.json`` and ``.csv``; return the JSON path.

    ``machine`` defaults to :func:`machine_info`.  If that machine has a GPU
    (``torch.cuda.is_available()``), the files go to ``<results_dir>/gpu/``.
    Rows with a GPU ``target`` (cuda, gpu, ...) are refused when the machine
    has no GPU: a GPU figure is only reported when it was measured on one.
    Every row gets a ``run`` id (this call's, unless the row brings its own or
    a ``measured`` date from the file it was copied from): the report compares
    rows of one run only.
    """
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"bad results name {name!r}")
    rows = [_check_row(r) for r in rows]
    if machine is None:
        machine = machine_info()
    machine = dict(machine)
    has_gpu = bool((machine.get("gpu") or {}).get("name"))
    gpu_rows = [r for r in rows if is_gpu_target(str(r["target"]))]
    if gpu_rows and not has_gpu:
        raise ValueError(
            f"{len(gpu_rows)} row(s) have a GPU target but the machine has no GPU "
            "(torch.cuda.is_available() is False); refusing to record them"
        )
    base = Path(results_dir) if results_dir is not None else default_results_dir()
    out_dir = base / "gpu" if has_gpu else base
    out_dir.mkdir(parents=True, exist_ok=True)
    created = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    # A row copied from another results file keeps that file's run: the report
    # compares rows of one run only.
    run = f"{created} {machine_key(machine)} {secrets.token_hex(4)}"
    for r in rows:
        if not r.get("run"):
            r["run"] = r.get("measured") or run
    doc = {
        "name": name,
        "created": created,
        "machine": machine,
        "notes": notes,
        "rows": rows,
    }
    jpath = out_dir / f"{name}.json"
    tmp = jpath.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=False, default=str) + "\n")
    tmp.replace(jpath)

    cpath = out_dir / f"{name}.csv"
    extra_cols = sorted({k for r in rows for k in r} - set(ROW_FIELDS))
    with open(cpath, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*ROW_FIELDS, *extra_cols, "machine", "date"])
        mk = machine_key(machine)
        for r in rows:
            vals = []
            for k in (*ROW_FIELDS, *extra_cols):
                v = r.get(k)
                vals.append(json.dumps(v) if isinstance(v, (dict, list)) else ("" if v is None else v))
            w.writerow([*vals, mk, doc["created"]])
    return jpath


def read_results(path: str | os.PathLike) -> dict:
    """Load one results JSON written by :func:`write_results`; ValueError for a JSON file
    that is not one (another tool's output kept beside the results)."""
    doc = json.loads(Path(path).read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a results file (a JSON {type(doc).__name__})")
    doc.setdefault("rows", [])
    doc.setdefault("machine", {})
    doc["path"] = str(path)
    return doc


def load_all_results(results_dir: str | os.PathLike | None = None) -> list[dict]:
    """Every results JSON under ``results_dir`` (and its ``gpu/``), sorted by path."""
    base = Path(results_dir) if results_dir is not None else default_results_dir()
    docs = []
    for p in sorted(base.rglob("*.json")):
        if "plots" in p.relative_to(base).parts:
            continue
        try:
            doc = read_results(p)
        except (OSError, ValueError):
            continue
        if isinstance(doc.get("rows"), list):
            docs.append(doc)
    return docs


# ---------------------------------------------------------------------------
# Formatting helpers
# ---------------------------------------------------------------------------


def fmt_time(s: float | None) -> str:
    """Seconds -> '16.8 ns' / '5.10 ms' / '1.90 s'."""
    if s is None:
        return "—"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if s >= scale or unit == "ns":
            v = s / scale
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{s} s"


def fmt_rate(v: float | None, unit: str = "") -> str:
    """1.21e8 -> '121 M' + unit."""
    if v is None:
        return "—"
    for scale, p in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1, "")):
        if abs(v) >= scale or p == "":
            x = v / scale
            s = f"{x:.3g}" if x < 100 else f"{x:.0f}"
            return f"{s} {p}{unit}".strip()
    return str(v)


def fmt_size(n: int) -> str:
    """Powers of two as 2^k, otherwise the number."""
    n = int(n)
    if n > 0 and n & (n - 1) == 0 and n >= 16:
        return f"2^{n.bit_length() - 1}"
    return f"{n:,}"


__all__ = [
    "ROW_FIELDS",
    "Timing",
    "time_runs",
    "cuda_sync",
    "cpu_cores",
    "machine_info",
    "machine_key",
    "machine_summary",
    "gpu_info",
    "make_row",
    "row_from_timing",
    "op_group",
    "is_gpu_target",
    "write_results",
    "read_results",
    "load_all_results",
    "default_results_dir",
    "fmt_time",
    "fmt_rate",
    "fmt_size",
]
