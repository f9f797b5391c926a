"""Build and run the peer benchmark programs in ``bench/peers/``.

The peers are small programs of ours (``bench/peers/arkworks``, Rust;
``bench/peers/gnark``, Go) that time arkworks 0.6 and gnark-crypto v0.22, taken
from crates.io and the Go module proxy, on this machine and print CSV lines::

    system,op,curve,size,threads,runs,min_ms,median_ms,extra

This module builds them once into a cache outside the repository
(``~/.cache/zktensor/peers``, or ``$ZKTENSOR_PEER_CACHE``), rebuilding only
when their sources or the toolchain change, runs them with the thread count
set through the environment (``RAYON_NUM_THREADS`` / ``GOMAXPROCS``), and
parses their output into :class:`PeerResult` records.

Ops (the programs' first argument) and the rows each prints:

=====  ===================================================================
mul    single thread regardless of ``threads``: ``fr_mul_chain``,
       ``fr_mul_array``, ``fq_mul_chain`` (both); ``fq_mul_array``
       (arkworks); ``fr_mul_vector`` (gnark, AVX-512 IFMA when present)
fft    BN254 Fr at 2^16 and 2^20: ``fr_fft_in_place`` (arkworks, natural
       order), ``fr_fft_dif`` (gnark, bit-reversed out) and
       ``fr_fft_dif_bitrev`` (gnark, natural order)
msm    ``g1_msm`` BN254 2^12/2^16/2^18/2^20 at ``threads``, BN254 2^16 at
       1 thread, BLS12-381 2^16/2^18 at ``threads``
=====  ===================================================================

Command line (from the repository root)::

    python -m bench.peers                 # default plan, saved as results/peers.json
    python -m bench.peers --peer gnark --op mul --threads 1 --no-save
    python -m bench.peers --build-only
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

try:  # run as ``python -m bench.peers`` or imported as ``bench.peers``
    from bench.common import cpu_cores, machine_info, make_row, op_group, write_results
except ImportError:  # run as ``python bench/peers.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.common import cpu_cores, machine_info, make_row, op_group, write_results

OPS = ("mul", "fft", "msm")


@dataclass(frozen=True)
class PeerSpec:
    name: str  # our short name
    system: str  # the name used in results rows
    subdir: str  # under the peers directory
    tool: str  # "cargo" or "go"
    thread_env: str  # environment variable setting the thread count
    binary: str  # built executable's file name


PEERS: dict[str, PeerSpec] = {
    "arkworks": PeerSpec("arkworks", "arkworks", "arkworks", "cargo", "RAYON_NUM_THREADS", "ark-peer-bench"),
    "gnark": PeerSpec("gnark", "gnark-crypto", "gnark", "go", "GOMAXPROCS", "gnark-peer-bench"),
}
_ALIASES = {"ark": "arkworks", "gnark-crypto": "gnark", "gnark_crypto": "gnark"}

#: Default measurement plan: (op, threads); None means all cores.
DEFAULT_PLAN: tuple[tuple[str, int | None], ...] = (("mul", 1), ("fft", None), ("msm", None))


class PeerError(RuntimeError):
    pass


def _spec(peer: str) -> PeerSpec:
    key = _ALIASES.get(peer, peer)
    if key not in PEERS:
        raise ValueError(f"unknown peer {peer!r}; known: {sorted(PEERS)}")
    return PEERS[key]


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Records
# ---------------------------------------------------------------------------


@dataclass
class PeerResult:
    """One CSV line of a peer program."""

    system: str  # "arkworks" | "gnark-crypto"
    version: str  # "0.6" | "v0.22.0"
    op: str  # e.g. "fr_mul_chain", "g1_msm", "fr_fft_dif_bitrev"
    curve: str  # "bn254" | "bls12-381"
    size: int  # multiplications / points / elements per timed run
    threads: int
    runs: int  # clean runs kept
    min_ms: float
    median_ms: float
    extra: str
    clean: int | None = None
    tried: int | None = None

    @property
    def min_s(self) -> float:
        return self.min_ms / 1e3

    @property
    def median_s(self) -> float:
        return self.median_ms / 1e3

    @property
    def group(self) -> str:
        return op_group(self.op)

    def to_row(self) -> dict:
        """A results row for :func:`bench.common.write_results`.

        ``unit_value`` is size / median (the peers' own ``extra`` text quotes
        rates from the minimum)."""
        return make_row(
            self.system,
            self.op,
            self.curve,
            self.size,
            self.threads,
            self.median_s,
            self.min_s,
            strategy="",
            target="cpu",
            runs=self.runs,
            version=self.version,
            extra=self.extra,
        )


_SYSTEM_RE = re.compile(r"^(?P<name>.+?)-(?P<version>v?\d[\w.\-]*)$")
_CLEAN_RE = re.compile(r"clean (\d+)/(\d+) runs")


def split_system(s: str) -> tuple[str, str]:
    """'gnark-crypto-v0.22.0' -> ('gnark-crypto', 'v0.22.0'); 'arkworks-0.6' -> ('arkworks', '0.6')."""
    m = _SYSTEM_RE.match(s.strip())
    return (m["name"], m["version"]) if m else (s.strip(), "")


def parse_peer_line(line: str) -> PeerResult | None:
    """Parse one output line; None for comments, the header and blank lines.

    ``extra`` may itself contain commas (gnark prints ``a[i].Mul(&a[i],&b[i])``),
    so the line is split into at most 9 fields."""
    line = line.strip()
    if not line or line.startswith("#") or line.startswith("system,"):
        return None
    parts = line.split(",", 8)
    if len(parts) < 8:
        raise ValueError(f"not a peer CSV line: {line!r}")
    if len(parts) == 8:
        parts.append("")
    system, op, curve, size, threads, runs, mn, med, extra = parts
    name, version = split_system(system)
    m = _CLEAN_RE.search(extra)
    try:
        return PeerResult(
            system=name,
            version=version,
            op=op.strip(),
            curve=curve.strip(),
            size=int(size),
            threads=int(threads),
            runs=int(runs),
            min_ms=float(mn),
            median_ms=float(med),
            extra=extra.strip(),
            clean=int(m[1]) if m else None,
            tried=int(m[2]) if m else None,
        )
    except ValueError as e:
        raise ValueError(f"bad peer CSV line {line!r}: {e}") from None


def parse_peer_output(text: str) -> list[PeerResult]:
    """Parse a whole peer program's stdout."""
    out = []
    for line in text.splitlines():
        r = parse_peer_line(line)
        if r is not None:
            out.append(r)
    return out


# ---------------------------------------------------------------------------
# Locations and building
# ---------------------------------------------------------------------------


def peers_dir() -> Path:
    """``$ZKTENSOR_PEERS_DIR``, else ``bench/peers`` beside this module."""
    env = os.environ.get("ZKTENSOR_PEERS_DIR")
    return Path(env) if env else Path(__file__).resolve().parent / "peers"


def cache_dir() -> Path:
    """``$ZKTENSOR_PEER_CACHE``, else ``$XDG_CACHE_HOME/zktensor/peers`` (~/.cache)."""
    env = os.environ.get("ZKTENSOR_PEER_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "zktensor" / "peers"


def _tool_version(*cmd: str) -> str:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60)
        return out.stdout.strip() or out.stderr.strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"unavailable ({e.__class__.__name__})"


def toolchain_versions() -> dict:
    return {
        "cargo": _tool_version("cargo", "--version"),
        "rustc": _tool_version("rustc", "--version"),
        "go": _tool_version("go", "version"),
    }


def source_hash(peer: str) -> str:
    """sha256 over the peer's source files (paths and contents) and toolchain."""
    spec = _spec(peer)
    root = peers_dir() / spec.subdir
    h = hashlib.sha256()
    files = sorted(
        p for p in root.rglob("*")
        if p.is_file() and "target" not in p.relative_to(root).parts
    )
    if not files:
        raise PeerError(f"no sources for {peer} in {root}")
    for p in files:
        h.update(str(p.relative_to(root)).encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    tool = ("cargo", "--version") if spec.tool == "cargo" else ("go", "version")
    h.update(_tool_version(*tool).encode())
    if spec.tool == "cargo":
        h.update(_tool_version("rustc", "--version").encode())
    return h.hexdigest()


def _stamp_path(spec: PeerSpec) -> Path:
    return cache_dir() / spec.name / "stamp.json"


def build_info(peer: str) -> dict | None:
    """The stamp of the last successful build (hash, binary, seconds, date)."""
    p = _stamp_path(_spec(peer))
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _set_priority(nice: int) -> None:
    """In the child before exec: own session, and ``nice`` for both the
    process and its session's autogroup.  With CONFIG_SCHED_AUTOGROUP the CPU
    is shared between sessions first, so a plain nice value would only count
    against processes of our own session."""
    try:
        os.setsid()
    except OSError:
        pass
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass
    try:
        os.nice(nice)
    except OSError:
        pass


def _stream(cmd: Sequence[str], *, cwd: Path, env: dict, prefix: str,
            on_line: Callable[[str], None] | None = None, heartbeat_s: float = 30.0,
            timeout: float | None = None, echo_stdout: bool = True,
            nice: int | None = None) -> tuple[int, str, str]:
    """Run cmd, echo stderr (and optionally stdout) with a prefix as it comes,
    print a heartbeat while silent; return (returncode, stdout, stderr)."""
    t0 = time.monotonic()
    last = [t0]
    out_lines: list[str] = []
    err_lines: list[str] = []
    proc = subprocess.Popen(
        list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
        preexec_fn=(lambda: _set_priority(nice)) if nice else None,
    )

    def pump(stream, sink, echo, handler):
        for line in stream:
            sink.append(line)
            last[0] = time.monotonic()
            if echo:
                _log(f"{prefix} {line.rstrip()}")
            if handler is not None:
                handler(line)

    threads = [
        threading.Thread(target=pump, args=(proc.stdout, out_lines, echo_stdout, on_line), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, err_lines, True, None), daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        while proc.poll() is None:
            time.sleep(0.5)
            now = time.monotonic()
            if timeout is not None and now - t0 > timeout:
                proc.kill()
                raise PeerError(f"{' '.join(cmd)} timed out after {timeout:.0f} s")
            if now - last[0] > heartbeat_s:
                _log(f"{prefix} ... still running ({now - t0:.0f} s)")
                last[0] = now
    except BaseException:
        if proc.poll() is None:
            proc.kill()
        raise
    for t in threads:
        t.join(timeout=10)
    return proc.returncode, "".join(out_lines), "".join(err_lines)


def build_peer(peer: str, *, force: bool = False) -> Path:
    """Build a peer program (if its sources changed) and return its executable.

    arkworks: ``cargo build --release --locked`` in the peer directory (so its
    ``.cargo/config.toml`` with ``target-cpu=native`` applies) with
    ``CARGO_TARGET_DIR`` in the cache.  gnark: ``go build -o <cache>/...``.
    The first build downloads and compiles dependencies (minutes)."""
    spec = _spec(peer)
    src = peers_dir() / spec.subdir
    if not src.is_dir():
        raise PeerError(f"peer sources not found: {src}")
    cdir = cache_dir() / spec.name
    cdir.mkdir(parents=True, exist_ok=True)
    digest = source_hash(peer)
    stamp = build_info(peer)
    if (
        not force
        and stamp
        and stamp.get("hash") == digest
        and Path(stamp.get("binary", "")).is_file()
    ):
        return Path(stamp["binary"])

    env = dict(os.environ)
    if spec.tool == "cargo":
        if shutil.which("cargo") is None:
            raise PeerError("cargo not found on PATH")
        target = cdir / "target"
        env["CARGO_TARGET_DIR"] = str(target)
        cmd = ["cargo", "build", "--release", "--locked"]
        binary = target / "release" / spec.binary
    else:
        if shutil.which("go") is None:
            raise PeerError("go not found on PATH")
        binary = cdir / spec.binary
        env.setdefault("GOFLAGS", "-mod=readonly")
        cmd = ["go", "build", "-o", str(binary), "."]
    _log(f"[{spec.name}] building in {src} -> {binary} (first build downloads and compiles dependencies; minutes)")
    t0 = time.monotonic()
    rc, out, err = _stream(cmd, cwd=src, env=env, prefix=f"[{spec.name} build]")
    secs = time.monotonic() - t0
    if rc != 0 or not binary.is_file():
        raise PeerError(f"building {spec.name} failed (exit {rc}) after {secs:.0f} s:\n{err[-4000:]}")
    _log(f"[{spec.name}] built in {secs:.1f} s")
    info = {
        "peer": spec.name,
        "hash": digest,
        "binary": str(binary),
        "build_seconds": round(secs, 1),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join(cmd),
    }
    _stamp_path(spec).write_text(json.dumps(info, indent=1) + "\n")
    return binary


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


def _progress(spec: PeerSpec) -> Callable[[str], None]:
    def on_line(line: str) -> None:
        try:
            r = parse_peer_line(line)
        except ValueError:
            _log(f"[{spec.name}] {line.rstrip()}")
            return
        if r is None:
            if line.startswith("#"):
                _log(f"[{spec.name}] {line.rstrip()}")
            return
        _log(
            f"[{spec.name}] {r.op} {r.curve} size={r.size} threads={r.threads}: "
            f"median {r.median_ms:.3f} ms, min {r.min_ms:.3f} ms ({r.extra})"
        )

    return on_line


def foreign_load(interval: float = 1.0) -> float | None:
    """Cores' worth of CPU used by other processes over ``interval`` seconds
    (0.0 = idle machine, 2.0 = both cores of a 2-core machine busy)."""
    from bench.common import _machine_busy_s, _self_cpu_s

    b0, s0, t0 = _machine_busy_s(), _self_cpu_s(), time.monotonic()
    time.sleep(interval)
    b1, s1, t1 = _machine_busy_s(), _self_cpu_s(), time.monotonic()
    if b0 is None or b1 is None:
        return None
    return max(0.0, (b1 - b0) - (s1 - s0)) / (t1 - t0)


def wait_for_quiet(max_load: float = 0.15, quiet_s: float = 5.0, max_wait_s: float = 600.0,
                   echo: bool = True) -> float:
    """Wait until other processes use at most ``max_load`` cores for
    ``quiet_s`` seconds in a row (the machine may be shared), at most
    ``max_wait_s``; return the seconds waited.  Timing then goes ahead anyway
    (the peers' own per-run filter still discards disturbed runs)."""
    t0 = time.monotonic()
    quiet_since = None
    last_msg = t0
    while True:
        load = foreign_load(1.0)
        now = time.monotonic()
        if load is None:
            return now - t0
        if load <= max_load:
            quiet_since = quiet_since or now - 1.0
            if now - quiet_since >= quiet_s:
                return now - t0
        else:
            quiet_since = None
        if now - t0 >= max_wait_s:
            if echo:
                _log(f"[peers] machine still busy ({load:.2f} cores used by others) after {now - t0:.0f} s; going ahead")
            return now - t0
        if echo and now - last_msg >= 30:
            _log(f"[peers] waiting for a quiet machine: others use {load:.2f} cores ({now - t0:.0f} s)")
            last_msg = now


def is_clean(r: PeerResult) -> bool:
    """At least half the asked-for runs were undisturbed.  The peers stop at
    ``clean == asked`` or after ``4 * asked`` tries, so ``clean < tried / 8``
    means fewer than half of the asked runs were clean."""
    if r.clean is None or r.tried is None:
        return True
    return r.clean > 0 and 8 * r.clean >= r.tried


def _quality(r: PeerResult) -> tuple[int, int]:
    """More clean runs is better; at equal counts, fewer tries (later wins ties)."""
    return (r.clean or 0, -(r.tried or 0))


def run_peer(
    peer: str,
    op: str | None = None,
    threads: int | None = None,
    *,
    build: bool = True,
    timeout: float | None = None,
    echo: bool = True,
    wait_quiet_s: float | None = 600.0,
    nice: int | None = None,
) -> list[PeerResult]:
    """Run one peer program and return its parsed rows.

    ``peer``: "gnark" (or "gnark-crypto") | "arkworks".  ``op``: "mul" | "fft" |
    "msm" | None (all three).  ``threads``: value of GOMAXPROCS /
    RAYON_NUM_THREADS (default: all cores this process may use); ``mul`` rows
    are single-threaded whatever it is, and ``msm`` adds a 1-thread BN254 2^16
    row.  Builds first if needed (``build=False``: use the cached binary).
    Waits up to ``wait_quiet_s`` for other processes to go quiet first
    (:func:`wait_for_quiet`; None: don't wait).  ``nice``: scheduling
    priority change for the peer process (negative needs privileges)."""
    spec = _spec(peer)
    if op is not None and op not in OPS:
        raise ValueError(f"unknown op {op!r}; known: {OPS}")
    if build:
        binary = build_peer(peer)
    else:
        stamp = build_info(peer)
        if not stamp or not Path(stamp.get("binary", "")).is_file():
            raise PeerError(f"{peer} is not built; call build_peer({peer!r})")
        binary = Path(stamp["binary"])
    nthreads = threads or cpu_cores()
    env = dict(os.environ)
    env[spec.thread_env] = str(nthreads)
    cmd = [str(binary)] + ([op] if op else [])
    if wait_quiet_s:
        waited = wait_for_quiet(max_wait_s=wait_quiet_s, echo=echo)
        if echo and waited > 10:
            _log(f"[peers] waited {waited:.0f} s for a quiet machine")
    if echo:
        _log(f"[{spec.name}] {spec.thread_env}={nthreads} {' '.join(cmd)}")
    t0 = time.monotonic()
    rc, out, err = _stream(
        cmd,
        cwd=peers_dir() / spec.subdir,
        env=env,
        prefix=f"[{spec.name}]",
        on_line=_progress(spec) if echo else None,
        timeout=timeout,
        echo_stdout=False,
        nice=nice,
    )
    if rc != 0:
        raise PeerError(f"{spec.name} {op or 'all'} exited {rc}:\n{err[-4000:]}")
    results = parse_peer_output(out)
    if echo:
        _log(f"[{spec.name}] {op or 'all'}: {len(results)} rows in {time.monotonic() - t0:.0f} s")
    return results


def run_plan(
    peers: Iterable[str] = ("gnark", "arkworks"),
    plan: Iterable[tuple[str, int | None]] = DEFAULT_PLAN,
    *,
    timeout: float | None = None,
    retries: int = 2,
    wait_quiet_s: float | None = 600.0,
    nice: int | None = None,
    on_done: Callable[[list[PeerResult]], None] | None = None,
) -> list[PeerResult]:
    """Run every (op, threads) of ``plan`` for every peer, one after another.

    When a row had fewer than half its runs undisturbed (:func:`is_clean`),
    the op is run again, up to ``retries`` more times; per row the attempt
    with the most clean runs is kept.  ``on_done(results_so_far)`` is called
    after each (op, peer), e.g. to save partial results."""
    peers = list(peers)
    for p in peers:  # build everything before timing anything
        build_peer(p)
    out: list[PeerResult] = []
    for op, threads in plan:
        for p in peers:
            best: dict[tuple, PeerResult] = {}
            for attempt in range(retries + 1):
                for r in run_peer(p, op, threads, build=False, timeout=timeout, wait_quiet_s=wait_quiet_s,
                                  nice=nice):
                    key = (r.op, r.curve, r.size, r.threads)
                    if key not in best or _quality(r) >= _quality(best[key]):
                        best[key] = r
                dirty = [r for r in best.values() if not is_clean(r)]
                if not dirty:
                    break
                if attempt < retries:
                    _log(f"[{p}] {op}: {len(dirty)} row(s) mostly disturbed by other processes "
                         f"({', '.join(f'{r.op} {r.size}: {r.clean}/{r.tried}' for r in dirty)}); running again")
            out.extend(best.values())
            if on_done is not None:
                on_done(list(out))
    return out


def _row_key(row: dict) -> tuple:
    return (row["system"], row["op"], row["field_or_curve"], int(row["size"]), int(row["threads"]))


def save_peer_results(results: Sequence[PeerResult], name: str = "peers", *, notes: str = "",
                      results_dir: str | os.PathLike | None = None, merge: bool = False,
                      machine: dict | None = None) -> Path:
    """Write peer results through :func:`bench.common.write_results`, with the
    machine description, toolchain versions and peer build times.

    ``merge=True`` keeps the rows of an existing ``<name>.json`` written on the
    same machine (same :func:`bench.common.machine_key`) that the new results do
    not replace (same system, op, curve, size, threads); each row records its
    own measurement date in ``measured``."""
    from bench.common import default_results_dir, machine_key, read_results

    if machine is None:
        machine = machine_info()
        machine["toolchains"] = toolchain_versions()
        machine["peer_builds"] = {p: build_info(p) for p in PEERS}
    today = machine.get("date") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    rows = []
    for r in results:
        row = r.to_row()
        row["measured"] = today
        rows.append(row)
    if merge:
        base = Path(results_dir) if results_dir is not None else default_results_dir()
        gpu = bool((machine.get("gpu") or {}).get("name"))
        old_path = (base / "gpu" if gpu else base) / f"{name}.json"
        if old_path.is_file():
            old = read_results(old_path)
            if machine_key(old.get("machine") or {}) == machine_key(machine):
                new_keys = {_row_key(r) for r in rows}
                kept = [r for r in old["rows"] if _row_key(r) not in new_keys]
                for r in kept:
                    r.setdefault("measured", (old.get("machine") or {}).get("date", ""))
                rows = kept + rows
                if kept and old.get("notes") and old["notes"] != notes:
                    notes = f"{old['notes']} || later rows ({len(rows) - len(kept)}, see `measured`): {notes}"
            else:
                _log(f"[peers] {old_path} is from another machine; not merging")
    return write_results(name, rows, machine, results_dir=results_dir, notes=notes)


def peer_rows(results: Iterable[PeerResult]) -> list[dict]:
    return [r.to_row() for r in results]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", action="append", choices=sorted(set(PEERS) | set(_ALIASES)),
                    help="peer to run (repeatable; default both)")
    ap.add_argument("--op", action="append", choices=OPS, help="op to run (repeatable; default: the plan)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for every op given with --op (default: plan = mul@1, fft/msm@all cores)")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--force-build", action="store_true")
    ap.add_argument("--save", default="peers", help="results name (default peers -> bench/results/peers.json)")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per peer program run")
    ap.add_argument("--retries", type=int, default=2, help="re-runs of an op whose rows were mostly disturbed")
    ap.add_argument("--merge", action="store_true",
                    help="keep rows of an existing results file (same machine) that this run does not replace")
    ap.add_argument("--nice", type=int, default=None,
                    help="nice value for the peer processes and their own autogroup (e.g. -20: run ahead of "
                         "other sessions' work on a shared machine; negative needs privileges)")
    ap.add_argument("--wait-quiet", type=float, default=600.0,
                    help="seconds to wait for other processes to go quiet before each run (0: don't)")
    args = ap.parse_args(argv)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so a running peer is killed too
    peers = args.peer or ["gnark", "arkworks"]
    for p in peers:
        build_peer(p, force=args.force_build)
    if args.build_only:
        for p in peers:
            print(json.dumps(build_info(p)))
        return 0
    if args.op:
        default_threads = dict(DEFAULT_PLAN)
        plan = [(op, args.threads if args.threads else default_threads.get(op)) for op in args.op]
    else:
        plan = [(op, args.threads if args.threads else t) for op, t in DEFAULT_PLAN]
    machine = None
    if not args.no_save:
        machine = machine_info()
        machine["toolchains"] = toolchain_versions()
        machine["peer_builds"] = {p: build_info(p) for p in PEERS}
        if args.nice:
            machine["peer_nice"] = args.nice

    notes = (f"peers run one after another by `python -m bench.peers`; plan {plan}; "
             f"waited up to {args.wait_quiet:.0f} s for a quiet machine before each run; retries {args.retries}"
             + (f"; peer processes at nice {args.nice} in their own autogroup" if args.nice else ""))

    def save(res: list[PeerResult]) -> None:  # after every (op, peer): partial results survive
        if not args.no_save:
            path = save_peer_results(res, args.save, merge=args.merge, machine=machine, notes=notes)
            _log(f"[peers] saved {len(res)} rows to {path}")

    results = run_plan(peers, plan, timeout=args.timeout, retries=args.retries,
                       wait_quiet_s=args.wait_quiet or None, nice=args.nice, on_done=save)
    print("system,op,curve,size,threads,runs,min_ms,median_ms,extra")
    for r in results:
        print(f"{r.system}-{r.version},{r.op},{r.curve},{r.size},{r.threads},{r.runs},"
              f"{r.min_ms:.3f},{r.median_ms:.3f},{r.extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
