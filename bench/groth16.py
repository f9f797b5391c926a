"""Groth16 prove time and peak memory: rapidsnark, snarkjs and zktensor in the same run.

    python -m bench.groth16                       # every size 12..18, both circuits, CPU
    python -m bench.groth16 --sizes 12 14 --runs 3 --circuits bits
    RAPIDSNARK=/path/to/rapidsnark/package/bin/prover python -m bench.groth16
        (RAPIDSNARK_VERSION and RAPIDSNARK_NOTE, when set, are written into its rows)
    python -m bench.groth16 --device cuda         # on a GPU machine (the device tool)

For each size 2^k and circuit it builds (once, cached in bench/build/groth16/, gitignored):

* ``bench``: a circom circuit of about 15/16·2^k constraints (so the domain is 2^k): a
  chain of squarings s[i+1] = s[i]^2 + i + 1 (dense witness values) and, for a quarter
  of the constraints, 32-bit range checks (a witness of 0/1 values);
* ``bits``: a SHA-256-style circuit of as many constraints, whose witness is almost all
  0 and 1: 32-bit words split into bits, then rounds of bitwise XNOR (one quadratic
  constraint a bit, as SHA-256's Ch, Maj and XORs are in circomlib);
* ``sha256``: circomlib's SHA-256 (``Sha256(nBits)``, npm's circomlib 2.0.5, installed into
  bench/build/groth16/ on first use): 2^15 is the issue's circuit, the hash of 64 bits
  (31,264 constraints, one block); 2^16 and up hash 2^(k-15) blocks. Its witness is
  almost all 0 and 1, as the bits circuit's, but from a real hash. No size below 2^15,
  and no Python build (without node it is skipped);
* compiled with circom2, a witness from snarkjs ``wtns calculate``, a proving key from
  ``zktensor setup`` (snarkjs has no powers of tau past 2^15 here; it proves with our
  keys, which the tests check), and its verification key.

Without node (the lent GPU machine) the same circuits are written from Python
(bench/pycircuits.py: the .r1cs and the .wtns, cached in bench/build/groth16/py_*/),
their keys made by ``zktensor setup`` on the bench's device; the snarkjs and rapidsnark
rows are skipped and the results say why, and proofs are checked by zktensor's verifier.

Then, on the same machine and in the same run, one row each (time: median of the
clean runs, as ``bench.common.time_runs`` keeps them; peak: the largest resident set):

* rapidsnark (when $RAPIDSNARK names its ``prover`` binary) and snarkjs ``groth16
  prove``, as processes;
* ``zktensor prove --no-serve``, as a process (start-up, imports, key load from the
  table cache, prove), with rapidsnark's arguments (``groth16_prove_cli``) and with
  ``--r1cs`` (``groth16_prove_cli_r1cs``: the witness checked), both without torch where
  `groth16.numpy_prover` can; the first, untimed run fills the table cache
  (``first_run_s``); and with a key it has never seen (``groth16_prove_cli_new_key``: a
  hard link of the key of its own and an empty table cache each run);
* ``zktensor prove`` through ``zktensor serve``, as a process (the thin client), with
  rapidsnark's arguments (``groth16_prove_service``) and with ``--r1cs``
  (``groth16_prove_service_r1cs``); the service's first proof, untimed, loads the key
  (``first_run_s``), and ``WARM_PROOFS`` more untimed proofs before each of the two rows
  (the second's first also loads the .r1cs) time a service in its steady state, as one
  that has served a few requests is (a freshly loaded service's first proofs are slower:
  the commit that added them); peak: the client's, and the service's in ``service_peak_mib``;
* with $RAPIDSNARK, rapidsnark and ``zktensor prove`` through the service once more, taken
  in turns (``groth16_prove_alternating``: A B C, C B A, ..., `bench.common.time_alternating`),
  the zktensor row with the median of the per-turn ratios (``turn_ratio_median``): the rows
  above are minutes apart, and this machine's speed can drift by more than the two differ;
  a third in each turn, ``python -c pass`` with the client's interpreter and environment
  (``interpreter_start_alternating``, system ``python``), times the start-up and exit
  that the Python client pays (the native client does not);
* the resident ``Prover`` in this process (``prove`` after one load and its first proof,
  which compiles what is not cached and starts the MSM helper, then ``WARM_PROOFS``
  untimed proofs; timed in-process);
* the process rows run ``zktensor`` as a user does, the console script of this
  interpreter where it runs this checkout (``python -m zktensor.cli`` otherwise); the
  rows say which (``command``), and whether that ``zktensor`` is the native client
  (``client``: ``zktensor.serve.native``, which proves through the service without starting
  Python, and hands every other command line, ``--no-serve`` and ``serve --status`` among
  them, to the Python command: those rows' times include its exec) or pip's script;
* the key load of a second process (``groth16_key_load``: ``Prover(zkey)`` timed in fresh
  processes, imports excluded, tables mapped from the table cache; ``groth16_key_load_r1cs``:
  with the .r1cs too).

Every proof is checked with ``snarkjs groth16 verify`` (without node: zktensor's verifier). Rows go to
bench/results/groth16.json (+ .csv; ``gpu/`` on a GPU machine) with the machine
description; ``extra`` notes how many runs were undisturbed by other processes.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (REPO_ROOT, cpu_cores, machine_info, make_row, row_from_timing, time_alternating,
                          time_runs, write_results)

BUILD = REPO_ROOT / "bench" / "build" / "groth16"
NODE_TOOLS = Path(os.environ.get("ZKT_FIXTURES_BUILD", REPO_ROOT / "tests" / "fixtures" / "build"))
BITS = 32

CIRCUIT = """pragma circom 2.0.0;

// zktensor benchmark circuit (generated by bench/groth16.py): a chain of squarings
// (dense witness values) and BITS-bit range checks (0/1 witness values).
template Bench(NCHAIN, NRANGE, BITS) {{
    signal input x;
    signal input v[NRANGE];
    signal output out;
    signal s[NCHAIN + 1];
    s[0] <== x * x;
    for (var i = 0; i < NCHAIN; i++) {{
        s[i + 1] <== s[i] * s[i] + i + 1;
    }}
    signal b[NRANGE][BITS];
    for (var j = 0; j < NRANGE; j++) {{
        var lc = 0;
        var e = 1;
        for (var i = 0; i < BITS; i++) {{
            b[j][i] <-- (v[j] >> i) & 1;
            b[j][i] * (b[j][i] - 1) === 0;
            lc += b[j][i] * e;
            e = e + e;
        }}
        lc === v[j];
    }}
    out <== s[NCHAIN] * x;
}}

component main {{public [x]}} = Bench({nchain}, {nrange}, {bits});
"""


BITS_CIRCUIT = """pragma circom 2.0.0;

// zktensor benchmark circuit (generated by bench/groth16.py): a SHA-256-style witness,
// almost all 0/1: words split into bits, then rounds of bitwise XNOR.
template Bits(NWORDS, ROUNDS) {{
    signal input v[NWORDS];
    signal output out;
    signal b[NWORDS][32];
    for (var j = 0; j < NWORDS; j++) {{
        var lc = 0;
        var e = 1;
        for (var i = 0; i < 32; i++) {{
            b[j][i] <-- (v[j] >> i) & 1;
            b[j][i] * (b[j][i] - 1) === 0;
            lc += b[j][i] * e;
            e = e + e;
        }}
        lc === v[j];
    }}
    signal x[ROUNDS + 1][32];
    for (var i = 0; i < 32; i++) {{
        x[0][i] <== b[0][i] * b[1 % NWORDS][(i + 7) % 32];
    }}
    for (var r = 0; r < ROUNDS; r++) {{
        for (var i = 0; i < 32; i++) {{
            x[r + 1][i] <== 1 - x[r][i] - b[r % NWORDS][(i + r) % 32]
                            + 2 * x[r][i] * b[r % NWORDS][(i + r) % 32];
        }}
    }}
    out <== x[ROUNDS][0] * x[ROUNDS][1];
}}

component main = Bits({nwords}, {rounds});
"""
SHA256_CIRCUIT = """pragma circom 2.0.0;

// zktensor benchmark circuit (generated by bench/groth16.py): circomlib's SHA-256 of
// {nbits} message bits.
include "circomlib/circuits/sha256/sha256.circom";

component main = Sha256({nbits});
"""
CIRCOMLIB = "circomlib@2.0.5"
CIRCUITS = ("bench", "bits", "sha256")
WARM_PROOFS = 3           # untimed proofs before the resident row and each service row (module doc)
NO_NODE = ("node is not installed here: circuits and witnesses written from Python (bench/pycircuits.py), "
           "proofs checked by zktensor's verifier")


def log(msg: str) -> None:
    print(f"[groth16 {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def node_tools() -> tuple[list[str], list[str]]:
    cli = NODE_TOOLS / "node_modules" / "snarkjs" / "build" / "cli.cjs"
    if not cli.exists():
        log("installing snarkjs/circom2 (scripts/fixtures.sh)")
        subprocess.run(["bash", str(REPO_ROOT / "scripts" / "fixtures.sh"), "multiplier"], check=True)
    return ["node", str(cli)], ["node", str(NODE_TOOLS / "node_modules" / "circom2" / "cli.js")]


def shape(k: int) -> tuple[int, int]:
    """(NCHAIN, NRANGE) for about 15/16 · 2^k constraints, a quarter of them range checks."""
    target = (1 << k) - (1 << (k - 4))
    nrange = max(1, target // 4 // (BITS + 1))
    nchain = target - nrange * (BITS + 1) - 2
    return nchain, nrange


def shape_bits(k: int) -> tuple[int, int]:
    """(NWORDS, ROUNDS) of the bits circuit for about 15/16 · 2^k constraints: an eighth of
    them split words into bits, the rest XNOR rounds of 32 constraints."""
    target = (1 << k) - (1 << (k - 4))
    nwords = max(2, target // 8 // 33)
    rounds = max(1, (target - nwords * 33) // 32 - 2)
    return nwords, rounds


def sha256_bits(k: int) -> int | None:
    """The message length of the sha256 circuit at 2^k: 64 bits (one block, the issue's
    circuit) at 2^15, 2^(k-15) blocks' worth above it (Sha256 pads nBits + 65 bits to
    whole blocks); None below 2^15, where not even one block fits."""
    if k < 15:
        return None
    return 64 if k == 15 else 512 * (1 << (k - 15)) - 65


def circomlib() -> Path:
    """The folder that holds npm's circomlib (circom's include path), installed on first use."""
    if not (BUILD / "node_modules" / "circomlib" / "circuits" / "sha256").is_dir():
        log(f"installing {CIRCOMLIB} into {BUILD}")
        BUILD.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(BUILD), "--no-audit", "--no-fund", "--loglevel=error",
                        CIRCOMLIB], check=True)
    return BUILD / "node_modules"


def build_python(k: int, circuit: str = "bench", device: str = "cpu") -> dict[str, Path]:
    """The 2^k circuit without node: .r1cs and .wtns from bench/pycircuits.py, the key from
    zktensor setup on `device` (a GPU machine has no CPU kernels: no MLIR bindings)."""
    from bench.pycircuits import circuit as make
    d = BUILD / (f"py_k{k}" if circuit == "bench" else f"py_{circuit}_k{k}")
    d.mkdir(parents=True, exist_ok=True)
    f = {"r1cs": d / "bench.r1cs", "wtns": d / "witness.wtns", "zkey": d / "bench.zkey",
         "vk": d / "verification_key.json"}
    if not f["r1cs"].exists() or not f["wtns"].exists():
        log(f"2^{k} {circuit}: circuit and witness from Python (bench/pycircuits.py)")
        t = time.perf_counter()
        make(k, circuit).write(f["r1cs"], f["wtns"])
        log(f"2^{k} {circuit}: written in {time.perf_counter() - t:.1f} s")
        for p in (f["zkey"], f["vk"]):
            if p.exists():
                p.unlink()
    if not f["zkey"].exists() or not f["vk"].exists():
        log(f"2^{k} {circuit}: zktensor setup on {device}")
        from zktensor.groth16.setup import setup
        t = time.perf_counter()
        res = setup(f["r1cs"], f["zkey"], vk_path=f["vk"], device=device)
        (d / "setup_seconds.txt").write_text(f"{time.perf_counter() - t:.3f}\n{json.dumps(res.times)}\n")
        log(f"2^{k} {circuit}: setup {time.perf_counter() - t:.1f} s ({res.times})")
    return f


def build(k: int, snarkjs: list[str], circom: list[str], circuit: str = "bench") -> dict[str, Path]:
    d = BUILD / (f"k{k}" if circuit == "bench" else f"{circuit}_k{k}")
    d.mkdir(parents=True, exist_ok=True)
    f = {"circom": d / "bench.circom", "input": d / "input.json", "r1cs": d / "bench.r1cs",
         "wasm": d / "bench_js" / "bench.wasm", "wtns": d / "witness.wtns", "zkey": d / "bench.zkey",
         "vk": d / "verification_key.json"}
    rng = random.Random(k)
    if circuit == "bench":
        nchain, nrange = shape(k)
        src = CIRCUIT.format(nchain=nchain, nrange=nrange, bits=BITS)
        inputs = {"x": "3", "v": [str(rng.getrandbits(BITS)) for _ in range(nrange)]}
        what = f"{nchain} squarings, {nrange} range checks"
    elif circuit == "sha256":
        nbits = sha256_bits(k)
        src = SHA256_CIRCUIT.format(nbits=nbits)
        inputs = {"in": [str(rng.getrandbits(1)) for _ in range(nbits)]}
        what = f"SHA-256 of {nbits} bits"
    else:
        nwords, rounds = shape_bits(k)
        src = BITS_CIRCUIT.format(nwords=nwords, rounds=rounds)
        inputs = {"v": [str(rng.getrandbits(32)) for _ in range(nwords)]}
        what = f"{nwords} words, {rounds} XNOR rounds"
    if not f["circom"].exists() or f["circom"].read_text() != src:
        for p in f.values():
            if p.exists():
                p.unlink()
        f["circom"].write_text(src)
    if not f["input"].exists():
        f["input"].write_text(json.dumps(inputs))
    if not f["r1cs"].exists() or not f["wasm"].exists():
        log(f"2^{k} {circuit}: circom2 ({what})")
        lib = ["-l", str(circomlib())] if circuit == "sha256" else []
        subprocess.run([*circom, str(f["circom"]), "--r1cs", "--wasm", "--prime", "bn128", *lib, "-o", str(d)],
                       check=True, capture_output=True)
    if not f["wtns"].exists():
        log(f"2^{k} {circuit}: witness")
        subprocess.run([*snarkjs, "wtns", "calculate", str(f["wasm"]), str(f["input"]), str(f["wtns"])],
                       check=True, capture_output=True)
    if not f["zkey"].exists() or not f["vk"].exists():
        log(f"2^{k} {circuit}: zktensor setup")
        from zktensor.groth16.setup import setup
        t = time.perf_counter()
        res = setup(f["r1cs"], f["zkey"], vk_path=f["vk"], device="cpu")
        (d / "setup_seconds.txt").write_text(f"{time.perf_counter() - t:.3f}\n{json.dumps(res.times)}\n")
        log(f"2^{k} {circuit}: setup {time.perf_counter() - t:.1f} s ({res.times})")
    return f


def wait_quiet(max_wait_s: float) -> float:
    try:
        from bench.peers import foreign_load, wait_for_quiet
    except ImportError:  # pragma: no cover
        return 0.0
    wait_for_quiet(max_wait_s=max_wait_s, echo=True)
    return foreign_load(1.0) or 0.0


def row(base: dict, **extra) -> dict:
    """A results row with extra columns (bench.common keeps unknown keys)."""
    base.update(extra)
    return base


TIME = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)


def run_process(cmd: list[str], env=None) -> int:
    """Run cmd to the end (its output must be nothing we need); its peak resident set, bytes.
    Through GNU time where there is one: a child forked from this (large) process counts our
    pages in its ru_maxrss until it execs, time's child forks from time."""
    out = tempfile.NamedTemporaryFile("r", suffix=".rss") if TIME else None
    full = [TIME, "-f", "%M", "-o", out.name, *cmd] if TIME else cmd
    p = subprocess.Popen(full, env=env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise RuntimeError(f"{' '.join(map(str, cmd[:4]))} ... failed ({code}): {err.decode()[-2000:]}")
    if out is not None:
        with out:
            return int(out.read().split()[-1]) * 1024
    return ru.ru_maxrss * 1024


def is_native(command: str) -> bool:
    from zktensor.serve.native import is_native as native
    return native(command)


def zktensor_command() -> list[str]:
    """The `zktensor` command as a user runs it: this interpreter's console script where it
    runs this checkout's package (an editable or a regular install of it), else
    ``python -m zktensor.cli`` (whose runpy start and second import of the cli module
    cost a few ms that the command does not)."""
    script = Path(sys.executable).with_name("zktensor")
    if script.is_file():
        found = subprocess.run([sys.executable, "-c", "import importlib.util as u; "
                                "print(u.find_spec('zktensor').origin)"], capture_output=True, text=True,
                               cwd=tempfile.gettempdir(), env={k: v for k, v in os.environ.items()
                                                               if k != "PYTHONPATH"})
        if found.returncode == 0 and Path(found.stdout.strip()).resolve() == REPO_ROOT / "zktensor" / "__init__.py":
            return [str(script)]
    return [sys.executable, "-m", "zktensor.cli"]


def time_process(cmd: list[str], runs: int, env=None):
    """(Timing, peak bytes) of cmd as a process: `time_runs`' clean-run rule (the process's CPU
    counts as ours: it is a waited child), the largest resident set of any run."""
    peaks = []
    tm = time_runs(lambda: peaks.append(run_process(cmd, env)), runs=runs, warmup=0)
    return tm, max(peaks)


def mib(n) -> float | None:
    return None if n is None else round(n / 2**20, 1)


class Service:
    """`zktensor serve` in a private run directory, for the client rows."""

    def __init__(self, env: dict, run_dir: Path):
        self.env = dict(env, ZKTENSOR_SERVE_DIR=str(run_dir))
        if run_dir.exists():
            shutil.rmtree(run_dir)
        self.proc = subprocess.Popen([sys.executable, "-m", "zktensor.cli", "serve"], env=self.env, cwd=REPO_ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 120
        while not (run_dir / "serve.json").exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError("zktensor serve did not start")
            time.sleep(0.05)

    def peak_bytes(self) -> int | None:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def stop(self) -> None:
        subprocess.run([sys.executable, "-m", "zktensor.cli", "serve", "--stop"], env=self.env, cwd=REPO_ROOT,
                       capture_output=True)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def bench_size(k: int, runs: int, device: str, snarkjs: list[str] | None, circom: list[str] | None, quiet_s: float,
               cli_runs: int, circuit: str = "bench") -> list[dict]:
    """The rows of one size and circuit. snarkjs None (no node): the circuit from Python, no
    snarkjs or rapidsnark row (`NO_NODE` says why), proofs checked by zktensor's verifier."""
    from zktensor.groth16.formats import read_r1cs
    from zktensor.groth16.prover import Prover, describe_run
    f = build(k, snarkjs, circom, circuit) if snarkjs else build_python(k, circuit, device)
    rc = read_r1cs(f["r1cs"], load_map=False)
    n_c = rc.n_constraints
    out_dir = f["zkey"].parent / "out"
    out_dir.mkdir(exist_ok=True)
    rows = []
    threads = cpu_cores()
    target = "cuda" if device == "cuda" else "cpu"
    tag = f"2^{k} {circuit}"
    common = dict(constraints=n_c, circuit=circuit)

    def verified(proof, public) -> None:
        if snarkjs:
            ok = subprocess.run([*snarkjs, "groth16", "verify", str(f["vk"]), str(public), str(proof)],
                                capture_output=True).returncode == 0
        else:
            from zktensor.groth16.verifier import verify
            ok = verify(f["vk"], public, proof)
        if not ok:
            raise RuntimeError(f"{tag}: {'snarkjs' if snarkjs else 'zktensor verify'} rejects the proof in {proof}")

    def process_row(system, op, cmd, n, version=None, env=None, note="", unit=None, **extra):
        load = wait_quiet(quiet_s)
        tm, peak = time_process(cmd, n, env=env)
        return timed_row(system, op, cmd, tm, peak, load, version, note, unit, **extra)

    def timed_row(system, op, cmd, tm, peak, load, version=None, note="", unit=None, **extra):
        """The row of a process timing (tm, peak bytes; load: others' cores before it); unit:
        by default the op group's (`bench.common.UNITS`)."""
        if system == "zktensor":        # which launcher the row timed (`zktensor_command`)
            script = Path(cmd[0]).name == "zktensor"
            extra = {"command": "zktensor" if script else "python -m zktensor.cli",
                     "client": "native" if script and is_native(cmd[0]) else "python", **extra}
        rows.append(row(row_from_timing(system, op, "bn254", 1 << k, threads, tm, target=target,
                                        unit=unit, unit_value=1 / tm.median_s,
                                        extra=f"{note}; {n_c} constraints ({circuit}); others' load "
                                              f"{load:.2f} cores before", **({"version": version} if version else {})),
                        peak_mib=mib(peak), times_s=tm.all_s, **common, **extra))
        log(f"{tag}: {system} {op} median {tm.median_s:.3f} s, peak {mib(peak)} MiB ({tm.extra})")
        return tm

    def new_key_row(plain, n, env):
        """`zktensor prove --no-serve` with a key it has never seen: each run names the .zkey by
        a hard link of its own (a new identity: its sha256 is computed again) and has an
        empty table cache (its tables made and the key validated), so what a user's first
        proof with a new key costs (the compiled kernels are warm: those are per machine)."""
        scratch = Path(tempfile.mkdtemp(prefix="new_key.", dir=out_dir))
        runs = iter(range(1 << 20))

        def one():
            i = next(runs)
            link = scratch / f"k{i}.zkey"
            os.link(f["zkey"], link)
            cmd = [str(link) if a == str(f["zkey"]) else a for a in plain]
            return run_process(cmd, env=dict(env, ZKTENSOR_TABLE_CACHE_DIR=str(scratch / f"tables{i}")))
        try:
            load = wait_quiet(quiet_s)
            peaks = []
            tm = time_runs(lambda: peaks.append(one()), runs=n, warmup=0)
            verified(out_dir / "cli_proof.json", out_dir / "cli_public.json")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        rows.append(row(row_from_timing("zktensor", "groth16_prove_cli_new_key", "bn254", 1 << k, threads, tm,
                                        target=target, unit="proofs/s", unit_value=1 / tm.median_s,
                                        extra=f"zktensor prove --no-serve, a key not seen before: process wall "
                                              f"(start-up, imports, the key's sha256, its tables made and the "
                                              f"key validated, prove); {n_c} constraints ({circuit}); others' "
                                              f"load {load:.2f} cores before"),
                        peak_mib=mib(max(peaks)), times_s=tm.all_s, **common))
        log(f"{tag}: zktensor groth16_prove_cli_new_key median {tm.median_s:.3f} s, peak {mib(max(peaks))} MiB "
            f"({tm.extra})")

    def key_load_row(f, device, n, env):
        """A second process's key load, timed inside fresh processes (imports excluded), its
        tables from the table cache that the CLI's first run filled: `Prover(zkey)` (the key
        alone, as rapidsnark takes it) and `Prover(zkey, r1cs)` (with the .r1cs that the
        witness check reads and checks against the key)."""
        code = ("import json, sys, time\nfrom zktensor.groth16 import Prover\nt = time.perf_counter()\n"
                "p = Prover(sys.argv[1], r1cs=sys.argv[3] or None, device=sys.argv[2], helper=False)\n"
                "print(json.dumps({'s': time.perf_counter() - t, 'tables': p.tables_from}))")
        for op, r1cs, what in (("groth16_key_load", "", "Prover(zkey)"),
                               ("groth16_key_load_r1cs", str(f["r1cs"]), "Prover(zkey, r1cs)")):
            load = wait_quiet(quiet_s)
            got = []
            for _ in range(max(n, 3)):
                out = subprocess.run([sys.executable, "-c", code, str(f["zkey"]), device, r1cs], env=env,
                                     cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout
                got.append(json.loads(out.strip().splitlines()[-1]))
            times = sorted(g["s"] for g in got)
            tables = sorted({g["tables"] for g in got})
            med = times[len(times) // 2]
            rows.append(row(make_row("zktensor", op, "bn254", 1 << k, threads, med, times[0], target=target,
                                     unit="loads/s", unit_value=1 / med, runs=len(times),
                                     extra=f"{what} in a fresh process, imports excluded; tables "
                                           f"{'/'.join(tables)}; {n_c} constraints ({circuit}); others' load "
                                           f"{load:.2f} cores before"),
                            tables_from=tables, times_s=[g["s"] for g in got], **common))
            log(f"{tag}: zktensor {what} in a second process: median {med:.3f} s ({tables})")

    def alternating_rows(rs_cmd, zk_cmd, env, n):
        """rapidsnark and `zktensor prove` through the service in turns (`time_alternating`:
        A B C, C B A, ...), one row each, op ``groth16_prove_alternating``: the block rows are
        minutes apart, and a VM's speed can drift by more than the two differ.
        The zktensor row also has the median of the per-turn ratios (zktensor / rapidsnark).
        The third in each turn, ``python -c pass`` with the client's interpreter and
        environment (op ``interpreter_start_alternating``), is the start and exit that any
        Python client pays before and after its request."""
        load = wait_quiet(quiet_s)
        rs_peaks, zk_peaks, py_peaks = [], [], []
        py_cmd = [sys.executable, "-c", "pass"]
        rs_tm, zk_tm, py_tm = time_alternating([lambda: rs_peaks.append(run_process(rs_cmd)),
                                                lambda: zk_peaks.append(run_process(zk_cmd, env=env)),
                                                lambda: py_peaks.append(run_process(py_cmd, env=env))], runs=n)
        verified(out_dir / "rs_proof.json", out_dir / "rs_public.json")
        verified(out_dir / "cli_proof.json", out_dir / "cli_public.json")
        ratios = sorted(z / r for r, z in zip(rs_tm.times_s or rs_tm.all_s, zk_tm.times_s or zk_tm.all_s))
        ratio = round(ratios[len(ratios) // 2], 3)
        turns = f"A B C, C B A, ...; clean {rs_tm.clean}/{rs_tm.tried} turns"
        timed_row("rapidsnark", "groth16_prove_alternating", rs_cmd, rs_tm, max(rs_peaks), load,
                  version=os.environ.get("RAPIDSNARK_VERSION"),
                  note=f"CLI process wall (key read + prove), in turns with zktensor prove through the "
                       f"service ({turns}){rs_built}")
        timed_row("zktensor", "groth16_prove_alternating", zk_cmd, zk_tm, max(zk_peaks), load,
                  note=f"zktensor prove through zktensor serve, rapidsnark's arguments: client process wall, "
                       f"in turns with rapidsnark ({turns})", turn_ratio_median=ratio)
        in_row = "not in the zktensor row: its client is native" if is_native(zk_cmd[0]) else "in the zktensor row"
        timed_row("python", "interpreter_start_alternating", py_cmd, py_tm, max(py_peaks), load,
                  version=platform.python_version(),
                  note="python -c pass, the interpreter and environment of the zktensor row: the start-up "
                       f"and exit that the Python client pays ({in_row}), in turns with both ({turns})")
        log(f"{tag}: in turns, median of the per-turn ratios zktensor / rapidsnark {ratio}; the client's "
            f"interpreter starts and exits in {1e3 * py_tm.median_s:.1f} ms")

    # rapidsnark and snarkjs, as processes (both need node's files: a witness from snarkjs, the
    # circom build; without node they are skipped, and the rows say why)
    rapidsnark = os.environ.get("RAPIDSNARK") if snarkjs else None
    rs_built = f"; {os.environ['RAPIDSNARK_NOTE']}" if os.environ.get("RAPIDSNARK_NOTE") else ""
    rs_cmd = None
    if rapidsnark:
        rs_cmd = cmd = [rapidsnark, str(f["zkey"]), str(f["wtns"]), str(out_dir / "rs_proof.json"),
                        str(out_dir / "rs_public.json")]
        run_process(cmd)
        verified(out_dir / "rs_proof.json", out_dir / "rs_public.json")
        process_row("rapidsnark", "groth16_prove_cli", cmd, runs, version=os.environ.get("RAPIDSNARK_VERSION"),
                    note=f"CLI process wall (key read + prove){rs_built}")
    sj_tm = None
    if snarkjs:
        sj = [*snarkjs, "groth16", "prove", str(f["zkey"]), str(f["wtns"]), str(out_dir / "sj_proof.json"),
              str(out_dir / "sj_public.json")]
        log(f"{tag}: snarkjs prove x{runs}")
        run_process(sj)                                             # warm-up (disk cache)
        sj_tm = process_row("snarkjs", "groth16_prove_cli", sj, runs, version="0.7.6",
                            note="CLI process wall (key read + prove; ~0.1 s of node start-up)")
    else:
        log(f"{tag}: snarkjs and rapidsnark rows skipped: {NO_NODE}")
        common["peers_skipped"] = NO_NODE

    # zktensor, resident key
    t = time.perf_counter()
    prover = Prover(f["zkey"], r1cs=f["r1cs"], device=device)
    load_s = time.perf_counter() - t
    log(f"{tag}: zktensor key loaded in {load_s:.1f} s ({prover.tables_from}); first prove (compiles what is "
        "not cached)")
    proof_path, public_path = out_dir / "zt_proof.json", out_dir / "zt_public.json"
    prover.prove_to_files(f["wtns"], proof_path, public_path)
    verified(proof_path, public_path)
    load = wait_quiet(quiet_s)
    tm = time_runs(lambda: prover.prove(f["wtns"]), runs=runs, warmup=WARM_PROOFS,
                   sync=(lambda: __import__("torch").cuda.synchronize()) if device == "cuda" else None)
    prover.prove(f["wtns"], profile=True)
    run = prover.last_run
    stages = {s.name: round(1e3 * s.seconds, 1) for s in sorted(run.stats, key=lambda s: s.start_s)}
    vs = f" (snarkjs/zktensor = {sj_tm.median_s / tm.median_s:.2f}x)" if sj_tm else ""
    log(f"{tag}: zktensor resident median {tm.median_s:.3f} s{vs}\n" + run.table())
    rows.append(row(row_from_timing("zktensor", "groth16_prove", "bn254", 1 << k, threads, tm, target=target,
                                    unit="proofs/s", unit_value=1 / tm.median_s,
                                    strategy=describe_run(run),
                                    extra=f"resident key (load {load_s:.1f} s, not included; {WARM_PROOFS} untimed "
                                          f"proofs before the timed ones); witness "
                                          f"checked against the .r1cs; {n_c} constraints ({circuit}); others' "
                                          f"load {load:.2f} cores before"),
                    load_s=round(load_s, 3), tables_from=prover.tables_from, checkpoints=prover.checkpoints,
                    stages_ms=stages, critical_path_ms=round(1e3 * run.critical_path_s(), 1),
                    profiled_wall_ms=round(1e3 * run.wall_s, 1),
                    peak_mib=mib(run.peak_host_bytes), key_resident_mib=mib(prover.memory_bytes()),
                    snarkjs_over_zktensor=round(sj_tm.median_s / tm.median_s, 3) if sj_tm else None,
                    times_s=tm.all_s, **common))
    prover.close()

    # zktensor prove, in-process and through the service, as processes
    if cli_runs:
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
        args = ["prove", str(f["zkey"]), str(f["wtns"]), str(out_dir / "cli_proof.json"),
                str(out_dir / "cli_public.json"), "--r1cs", str(f["r1cs"])]
        zktensor = zktensor_command()
        log(f"the zktensor command: {' '.join(zktensor)}")
        cmd = [*zktensor, *args]
        t = time.perf_counter()
        run_process(cmd + ["--no-serve", "--device", device], env=env)      # fills the table cache
        first = time.perf_counter() - t
        verified(out_dir / "cli_proof.json", out_dir / "cli_public.json")
        process_row("zktensor", "groth16_prove_cli_r1cs", cmd + ["--no-serve", "--device", device], cli_runs,
                    env=env, note="zktensor prove --no-serve --r1cs: process wall (start-up, imports, key from "
                                  "the table cache, witness check, prove; --engine auto: numpy_prover where it "
                                  "can, else the tensor prover)", first_run_s=round(first, 3))
        # rapidsnark's and snarkjs's arguments (no .r1cs): where it can, without torch (`numpy_prover`)
        rapid = [a for a in cmd if a not in ("--r1cs", str(f["r1cs"]))]         # rapidsnark's arguments
        plain = rapid + ["--no-serve", "--device", device]
        process_row("zktensor", "groth16_prove_cli", plain, cli_runs, env=env,
                    note="zktensor prove --no-serve: process wall (start-up, imports, key from the table "
                         "cache, prove; --engine auto: numpy_prover where it can, else the tensor prover)")
        new_key_row(plain, cli_runs, env)
        verified(out_dir / "cli_proof.json", out_dir / "cli_public.json")
        key_load_row(f, device, cli_runs, env)
        if device == "cpu":
            svc = Service(env, out_dir / "serve")
            try:
                t = time.perf_counter()
                run_process(rapid, env=svc.env)                    # the service loads the key
                first = time.perf_counter() - t
                verified(out_dir / "cli_proof.json", out_dir / "cli_public.json")
                for _ in range(WARM_PROOFS):
                    run_process(rapid, env=svc.env)
                process_row("zktensor", "groth16_prove_service", rapid, cli_runs, env=svc.env,
                            note=f"zktensor prove through zktensor serve, rapidsnark's arguments: client "
                                 f"process wall (the key resident in the service, after {WARM_PROOFS} "
                                 f"untimed proofs)", first_run_s=round(first, 3),
                            service_peak_mib=mib(svc.peak_bytes()))
                verified(out_dir / "cli_proof.json", out_dir / "cli_public.json")
                for _ in range(WARM_PROOFS):
                    run_process(cmd, env=svc.env)
                process_row("zktensor", "groth16_prove_service_r1cs", cmd, cli_runs, env=svc.env,
                            note=f"zktensor prove --r1cs through zktensor serve: client process wall (the key "
                                 f"and the .r1cs resident in the service, the witness checked, after "
                                 f"{WARM_PROOFS} untimed proofs)",
                            service_peak_mib=mib(svc.peak_bytes()))
                verified(out_dir / "cli_proof.json", out_dir / "cli_public.json")
                if rs_cmd:
                    alternating_rows(rs_cmd, rapid, svc.env, cli_runs)
                # the Python client's own cost: a process that starts, imports the client path
                # (no torch, no numpy) and makes one round trip to the service (a native
                # `zktensor` hands `serve --status` to the Python command)
                process_row("zktensor", "serve_client_start", [*zktensor, "serve", "--status"], max(cli_runs, 5),
                            env=svc.env, unit="calls/s", note="zktensor serve --status: client process wall "
                                                              "(Python start-up, the client's imports, one request "
                                                              "to the service)")
            finally:
                svc.stop()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(range(12, 19)), help="log2 constraints")
    ap.add_argument("--circuits", nargs="+", default=list(CIRCUITS), choices=CIRCUITS)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--cli-runs", type=int, default=3, help="zktensor prove process runs, each way (0: skip)")
    ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when present)")
    ap.add_argument("--quiet-wait", type=float, default=60.0,
                    help="seconds to wait for other processes to go quiet before each measurement")
    ap.add_argument("--name", default="groth16", help="results file name")
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args(argv)
    import torch
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if shutil.which("node"):
        snarkjs, circom = node_tools()
    else:
        log(f"node is not installed: {NO_NODE}")
        snarkjs = circom = None
    rows = []
    for circuit in a.circuits:
        for k in a.sizes:
            if circuit == "sha256" and (snarkjs is None or sha256_bits(k) is None):
                log(f"2^{k} sha256: skipped ({'no node here' if snarkjs is None else 'one block needs 2^15'})")
                continue
            rows += bench_size(k, a.runs, device, snarkjs, circom, a.quiet_wait, a.cli_runs, circuit)
            if not a.no_save:   # after every size: a long run keeps what it measured
                notes = ("bench/groth16.py: prove time and peak memory, rapidsnark (when $RAPIDSNARK), snarkjs "
                         "0.7.6 and zktensor in the same run; keys from zktensor setup")
                if snarkjs is None:
                    notes += f"; snarkjs and rapidsnark not run: {NO_NODE}"
                path = write_results(a.name, rows, machine_info(), notes=notes)
                log(f"wrote {path}")
    systems = [("rapidsnark", "groth16_prove_cli", "rapidsnark"), ("snarkjs", "groth16_prove_cli", "snarkjs"),
               ("zktensor", "groth16_prove_cli", "zt prove"), ("zktensor", "groth16_prove_service", "zt serve"),
               ("rapidsnark", "groth16_prove_alternating", "rapidsnark, turns"),
               ("zktensor", "groth16_prove_alternating", "zt serve, turns"),
               ("python", "interpreter_start_alternating", "python start, turns"),
               ("zktensor", "groth16_prove", "resident"), ("zktensor", "groth16_key_load", "key load"),
               ("zktensor", "groth16_key_load_r1cs", "key+r1cs load")]
    print(f"{'circuit':<8}{'size':>6}{'constraints':>12}" + "".join(f"{h:>22}" for *_, h in systems))
    by = {}
    for r in rows:
        by.setdefault((r["circuit"], r["size"]), {})[(r["system"], r["op"])] = r
    for (circuit, size), d in by.items():
        cells = []
        for sysname, op, _ in systems:
            r = d.get((sysname, op))
            cells.append(f"{r['median_s']:>9.3f} s {r.get('peak_mib') or float('nan'):>6.0f} MiB" if r else f"{'-':>22}")
        n_c = next(iter(d.values()))["constraints"]
        print(f"{circuit:<8}2^{size.bit_length() - 1:<4}{n_c:>12}" + "".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
