"""``zktensor warmup``: compile the kernels a Groth16 proof needs, before the first proof.

    zktensor warmup                 # BN254: field, NTT, G1/G2 MSMs, the prover on the demo key, the pairing
    zktensor warmup --curves bn254,bls12_381 --jobs 2
    zktensor warmup --device cuda   # the GPU proof's Triton kernels (the device graph)
    zktensor warmup --device cuda --zkey circuit_final.zkey --wtns witness.wtns   # those of your key's proof

Kernels are compiled on first use and cached on disk (`runtime.cache`); a proof on a
fresh machine would otherwise spend its first half-minute compiling. Each step runs the
ops a proof runs at small sizes (the compiled programs do not depend on the sizes, only
on the kinds of tables: plain or weighted, limb- or point-major), in its own process,
`--jobs` at a time: compiles in different processes run on different cores, and the cache
publishes every entry atomically, so two steps compiling the same kernel are harmless.

``--device cuda`` runs the steps on the GPU, the Triton target: the proof's device graph
(also with its tables in host memory, uploaded in chunks), its device MSMs and NTT passes.
There Triton compiles each kernel to the GPU's code on its first launch (kept in Triton's
cache, ``TRITON_CACHE_DIR``), one kernel after another in each process; its source comes
from the kernel cache or `.zktensor-prebuilt/` (a machine without the MLIR bindings cannot
generate it). So a GPU warmup first runs a compile pass: all steps in `--jobs` processes at
once, each compiling its share of the kernels (`runtime/compile_shards.py`), then the
steps themselves, which find the kernels compiled and check that the pass missed none.
The pairing step, the verifier's host code, is not a GPU kernel and is left to a warmup on
the CPU. With ``--zkey`` on a GPU, the proof of that key is the only step (`steps`;
``--ops`` adds the others).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager

from ..runtime.compile_shards import CLAIMS_ENV, ENV as SHARD_ENV

STEPS = ("field", "ntt", "msm_g1", "msm_g2", "prover", "pairing")


@contextmanager
def _attempt():
    """Around each call of a step. In a compile pass (runtime/compile_shards.py) the values
    are meaningless and any check on them may fail: go on, to the next call's kernels."""
    try:
        yield
    except Exception as e:
        if not os.environ.get(SHARD_ENV):
            raise
        print(f"zktensor warmup (compile pass): {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)


def _field(curve: str, device: str = "cpu") -> None:
    import zktensor as zt
    from ..kernels.field_programs import to_mont
    F = zt.field(f"{curve}.fr")
    a, b = F.random(64, device=device), F.random(64, device=device)
    with _attempt():
        (a * b - a.square() + 7).to_ints()
    with _attempt():
        zt.batch_inverse(b)
    with _attempt():
        to_mont(F, a.data)


def _ntt(curve: str, device: str = "cpu") -> None:
    import zktensor as zt
    from .r1cs_to_qap import coefficients, coset_evaluations, coset_shift
    F = zt.field(f"{curve}.fr")
    x = F.random((3, 1 << 10), device=device)
    with _attempt():
        coset_evaluations(coefficients(x), coset_shift(F, 1 << 10))      # the prover's two


def _points(G, n: int, device: str = "cpu"):
    """n distinct points for the price of ~2·sqrt(n) scalar multiplications: Q_j + R_k
    (Python-int scalars: their bits go to the device once)."""
    import secrets
    a = 1 << (n.bit_length() // 2)
    Q = G.generator((a,), device=device) * [secrets.randbelow(G.r) for _ in range(a)]
    R = G.generator((n // a,), device=device) * [secrets.randbelow(G.r) for _ in range(n // a)]
    return (Q.reshape(1, a) + R.reshape(n // a, 1)).reshape(n)


def _msm(curve: str, g: str, device: str = "cpu") -> None:
    import zktensor as zt
    from .key import PLAIN
    G = zt.group(f"{curve}.{g}")
    for n, M in ((1 << 9, PLAIN), (1 << 11, 1), (1 << 13, 1)):     # plain, weighted, point-major weighted
        with _attempt():
            P = _points(G, n, device)
            B = zt.msm_prepare(P, checkpoint=M, n_hint=n)
            k = G.Fr.random(n, device=device)
            with _attempt():
                zt.msm(zt.msm_plan(k, B, B), B)
            with _attempt():
                zt.msm(k, B)
            with _attempt():
                zt.msm_many([(k[: n // 2], 0), (k[n // 2:], n // 2)], B)
    with _attempt():
        zt.msm(G.Fr.random(64, device=device), _points(G, 64, device))


def _prover(curve: str, device: str = "cpu") -> None:
    from .demo import demo_files
    from .prover import Prover
    if device == "cpu":
        _without_torch(curve)
    if curve != "bn254":
        return                      # the demo key is BN254's; the steps above cover the others' ops
    f = demo_files()
    with _attempt(), Prover(f["zkey"], r1cs=f["r1cs"], device=device) as p:
        with _attempt():
            p.prove(f["wtns"])
        with _attempt():
            p.prove(f["wtns"], check=False)
    if device != "cpu":             # a key past the device's table budget: its chunked uploads
        with _attempt(), Prover(f["zkey"], r1cs=f["r1cs"], device=device, table_cache=False,
                                table_budget=1 << 16) as p:
            p.prove(f["wtns"])


def _without_torch(curve: str) -> None:
    """`zktensor prove`'s path without torch for a key it has not seen: its rows made and the
    key validated (`numpy_tables`: the curve equations, y's negation, the combinations over
    64-bit windows), then the proof (`numpy_prover`), with the demo key and a table cache of
    its own; for another curve, the rows and the checks over its generators."""
    import tempfile
    from ..kernels import msm_small_cpu
    if not msm_small_cpu.available():
        return                      # (the prover without torch needs the lanes loop)
    from .demo import demo_files
    from .numpy_prover import NumpyProver
    from .numpy_tables import plain_rows
    from .key_check import curve_residue
    from ..algebra.curves import group
    from ..kernels.host_words import affine_table
    if curve == "bn254":
        f = demo_files()
        with tempfile.TemporaryDirectory() as d, _env(ZKTENSOR_TABLE_CACHE_DIR=d, ZKTENSOR_TABLE_CACHE="on"):
            with _attempt():
                NumpyProver.load(f["zkey"]).prove(f["wtns"])
        return
    import numpy as np
    for which in ("g1", "g2"):
        G = group(f"{curve}.{which}")
        raw = affine_table(G, [G.generator])[0][0].tobytes()   # the generator as a .zkey holds a point
        k = np.zeros((1, G.fr.limbs32), dtype="<u4")
        k[0, 0] = 0x9E3779B9                                  # a 64-bit combination's scalar
        with _attempt():
            rows = plain_rows(G, raw)
            curve_residue(G, rows[:1])
            msm_small_cpu.msm_many([(G, rows, len(rows) // 2, [0], k)], bits=64)


@contextmanager
def _env(**values):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _pairing(curve: str, device: str = "cpu") -> None:
    """The verifier's compiled pairing check, G2 membership test and vk_x (one module)."""
    from ..kernels.pairing_cpu import compiled
    if compiled(curve, build=True) is None:
        raise RuntimeError(f"the {curve} pairing cannot be compiled here (no MLIR bindings)")


KEY_ENV = "ZKTENSOR_WARMUP_KEY"      # "zkey<os.pathsep>wtns": the user's own key (--zkey, --wtns)


def _key(_curve: str, device: str = "cpu") -> None:
    """A proof with the user's key: its sizes pick the kernels' specializations (Triton
    compiles a kernel again for other divisibilities of its integer arguments), so the demo
    key's proofs do not cover every kernel another key's proof launches."""
    from .prover import Prover
    zkey, wtns = os.environ[KEY_ENV].split(os.pathsep)
    with _attempt(), Prover(zkey, device=device) as p:
        p.prove(wtns, check=False)


def run_step(step: str, curve: str, device: str = "cpu") -> None:
    {"field": _field, "ntt": _ntt, "msm_g1": lambda c, d: _msm(c, "g1", d), "msm_g2": lambda c, d: _msm(c, "g2", d),
     "prover": _prover, "pairing": _pairing, "key": _key}[step](curve, device)


def steps(device: str = "cpu", key: bool = False, ops: bool = False) -> tuple:
    """The steps of a warmup on `device` (the pairing is host code: a CPU warmup's), and a
    proof with the user's key (`key`: one was given; once, under the first curve).

    On a GPU with a key, the proof of the key alone (unless `ops`): Triton compiles a
    kernel per specialization, so the other steps, at their own sizes, compile point
    programs and field kernels that the key's proof never launches (the G2 point programs
    among the longest compiles of all), in a wait the user sits through before a first
    proof (the commit that made this so has the counts). On the CPU a program compiles
    once for every size, and without a key nothing says which sizes the proofs will
    take: every step."""
    own = ("key",) if key else ()
    if device == "cpu":
        return STEPS + own
    if key and not ops:
        return own
    return tuple(s for s in STEPS if s != "pairing") + own


def _bar(done: int, total: int, what: str, t0: float) -> str:
    w = 24
    fill = w * done // total
    return f"\rzktensor warmup [{'#' * fill}{'-' * (w - fill)}] {done}/{total} {what:<28} {time.monotonic() - t0:5.1f} s"


def _stamp(curves, device: str = "cpu", key: tuple | None = None, ops: bool = False):
    """The file that says a warmup of `curves` on `device` ran to the end against this compiler
    and these kernels (a hash of their sources), so that setup scripts may call warmup every
    time."""
    import hashlib
    from pathlib import Path
    from ..runtime.cache import cache_root, compiler_fingerprint
    h = hashlib.sha256(compiler_fingerprint().encode())
    pkg = Path(__file__).resolve().parent.parent
    for f in sorted([*pkg.glob("kernels/*.py"), *pkg.glob("ops/**/*.py"), Path(__file__)]):
        h.update(f.read_bytes())
    h.update(",".join(sorted(curves)).encode())
    if device != "cpu":
        h.update(f"device {device}{' ops' if ops else ''}".encode())
    for f in key or ():
        st = os.stat(f)
        h.update(f"{os.path.abspath(f)} {st.st_size} {st.st_mtime_ns}".encode())
    return cache_root() / "kernels" / f"warmup-{h.hexdigest()[:16]}.done"


def _triton_cache() -> str:
    return os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")


def cubins(root: str) -> int:
    """GPU binaries in a Triton cache folder (0 where there is none)."""
    return sum(f.endswith(".cubin") for _, _, files in os.walk(root) for f in files) if os.path.isdir(root) else 0


def _spawn(args, env, stderr=subprocess.PIPE):
    return subprocess.Popen([sys.executable, "-m", "zktensor.groth16.warmup", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=stderr)


def _compile_pass(curves, device: str, shards: int, env: dict, out, tty: bool, ops: bool = False) -> float:
    """Every step of every curve in `shards` processes at once, each compiling the GPU kernels
    it reaches first (runtime/compile_shards.py, claims in a folder of this pass); the
    seconds it took. Progress: the GPU binaries in Triton's cache."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="zktensor-claims-") as claims:
        return _compile_pass_claiming(curves, device, shards, dict(env, **{CLAIMS_ENV: claims}), out, tty, ops)


def _compile_pass_claiming(curves, device: str, shards: int, env: dict, out, tty: bool, ops: bool) -> float:
    from ..runtime.cache import cache_root
    t0 = time.monotonic()
    cache = _triton_cache()
    before = cubins(cache)
    logs = cache_root() / "warmup-logs"
    logs.mkdir(parents=True, exist_ok=True)
    files = [open(logs / f"compile-pass-{k}.log", "wb") for k in range(shards)]
    procs = [_spawn(["--compile-pass", ",".join(curves), device, "ops" if ops else "-"],
                    dict(env, **{SHARD_ENV: f"{k}/{shards}"}),
                    stderr=f) for k, f in enumerate(files)]
    last = ""
    while any(p.poll() is None for p in procs):
        time.sleep(0.5)
        done = sum(p.poll() is not None for p in procs)
        line = (f"zktensor warmup: compile pass, {shards} processes: {cubins(cache) - before} kernels "
                f"compiled, {done}/{shards} processes done ({time.monotonic() - t0:.0f} s)")
        if tty:
            print("\r" + line, end="", file=out, flush=True)
        elif line.split(" (")[0] != last:
            print(line, file=out, flush=True)
            last = line.split(" (")[0]
    for f in files:
        f.close()
    if tty:
        print(file=out)
    raised = 0
    for k, p in enumerate(procs):
        text = (logs / f"compile-pass-{k}.log").read_text(errors="replace")
        raised += text.count("zktensor warmup (compile pass):")
        if p.returncode:      # a lost process leaves its kernels to the steps that follow
            tail = text.strip().splitlines()[-1:] or [f"exit {p.returncode}"]
            print(f"zktensor warmup: compile process {k} failed ({tail[0]}); the steps compile its share",
                  file=out)
    print(f"zktensor warmup: compile pass done in {time.monotonic() - t0:.1f} s "
          f"({cubins(cache) - before} kernels; {raised} calls stopped early on meaningless values, "
          f"logs in {logs})", file=out, flush=True)
    return time.monotonic() - t0


def warmup(curves=("bn254",), jobs: int | None = None, force: bool = False, out=sys.stderr,
           device: str = "cpu", key: tuple | None = None, ops: bool = False) -> int:
    """Run every (step, curve) in a process of its own on `device`, `jobs` at a time; 0 if all
    succeeded. On a GPU, a compile pass in `jobs` processes (default: the cores) goes first.
    key: (zkey, wtns), a proof with the user's own key as one more step (on a GPU the only
    one, unless `ops`: `steps`)."""
    stamp = _stamp(curves, device, key, ops)
    if stamp.exists() and not force:
        print(f"zktensor warmup: the kernels are compiled already ({stamp.parent}; --force runs it again)",
              file=out)
        return 0
    env = dict(os.environ, ZKTENSOR_COMPILE_NOTES="off")
    env.pop(SHARD_ENV, None)
    env.pop(CLAIMS_ENV, None)
    env.pop(KEY_ENV, None)
    if key is not None:
        env[KEY_ENV] = os.pathsep.join(str(os.path.abspath(f)) for f in key)
    tasks = [(s, c) for c in curves for s in steps(device, key is not None, ops) if s != "key" or c == curves[0]]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    tty = out.isatty()
    t0 = time.monotonic()
    if device != "cpu":
        _compile_pass(curves, device, max(1, jobs or os.cpu_count() or 1), env, out, tty, ops)
    jobs = max(1, jobs or min(len(tasks), os.cpu_count() or 1, 4))
    pending, running, failed, done = list(tasks), {}, [], 0
    while pending or running:
        while pending and len(running) < jobs:
            s, c = pending.pop(0)
            running[(s, c)] = _spawn([s, c, device], env)
        time.sleep(0.1)
        for task, p in list(running.items()):
            if p.poll() is None:
                continue
            del running[task]
            done += 1
            err = p.stderr.read().decode(errors="replace")
            p.stderr.close()
            if p.returncode:
                failed.append((task, err.strip().splitlines()[-1:] or [f"exit {p.returncode}"]))
            what = f"{task[1]} {task[0]}" + (" FAILED" if p.returncode else "")
            print(_bar(done, len(tasks), what, t0) if tty else
                  f"zktensor warmup: {done}/{len(tasks)} {what} ({time.monotonic() - t0:.1f} s)",
                  end="" if tty else "\n", file=out, flush=True)
    if tty:
        print(file=out)
    for (s, c), msg in failed:
        print(f"zktensor warmup: {c} {s} failed: {msg[0]}", file=out)
    from ..runtime.cache import cache_root
    where = f"kernels cached in {cache_root() / 'kernels'}" + ("" if device == "cpu" else "; GPU code in Triton's cache")
    print(f"zktensor warmup: {'done' if not failed else 'FAILED'} on {device} in {time.monotonic() - t0:.1f} s "
          f"({jobs} at a time; {where})", file=out)
    if not failed:
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(f"{','.join(curves)}\n")
    return 1 if failed else 0


def compile_pass_main(curves: str, device: str, ops: bool = False) -> int:
    """One process of the compile pass: every step of every curve, each call attempted."""
    for i, c in enumerate(curves.split(",")):
        for s in steps(device, bool(os.environ.get(KEY_ENV)), ops):
            if s != "key" or i == 0:
                with _attempt():
                    run_step(s, c, device)
    from ..runtime import compile_shards
    print(f"zktensor warmup (compile pass {os.environ.get(SHARD_ENV)}): compiled {len(compile_shards.compiled)}, "
          f"left {len(compile_shards.skipped)} to the others", file=sys.stderr)
    return 0


def configure(p) -> None:
    p.add_argument("--curves", default="bn254", help="comma-separated: bn254, bls12_381 (default: bn254)")
    p.add_argument("--jobs", type=int, help="steps at a time, each a process (default: the cores, at most 4); "
                   "with --device cuda also the compile pass's processes (default: the cores)")
    p.add_argument("--force", action="store_true", help="run even if a warmup of this code ran to the end")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                   help="cpu (default), or cuda: the GPU proof's Triton kernels, compiled on the GPU")
    p.add_argument("--zkey", help="also a proof with this proving key (with --wtns): the kernels in the "
                   "specializations its sizes need")
    p.add_argument("--wtns", help="the witness for --zkey's proof")
    p.add_argument("--ops", action="store_true", help="with --device cuda and --zkey: also the field, NTT and MSM "
                   "operations at small sizes (without --zkey they always run)")


def run(a) -> int:
    curves = [c.strip() for c in a.curves.split(",") if c.strip()]
    bad = [c for c in curves if c not in ("bn254", "bls12_381")]
    if bad:
        print(f"zktensor: error: unknown curve {bad[0]!r} (bn254, bls12_381)", file=sys.stderr)
        return 2
    device = getattr(a, "device", "cpu")
    if device == "cuda":
        import torch
        if not torch.cuda.is_available():
            print("zktensor: error: --device cuda: no CUDA GPU here", file=sys.stderr)
            return 2
    zkey, wtns = getattr(a, "zkey", None), getattr(a, "wtns", None)
    if (zkey is None) != (wtns is None):
        print("zktensor: error: --zkey and --wtns go together", file=sys.stderr)
        return 2
    for f in (zkey, wtns):
        if f is not None and not os.path.isfile(f):
            print(f"zktensor: error: {f}: no such file", file=sys.stderr)
            return 2
    return warmup(curves, a.jobs, a.force, device=device, key=(zkey, wtns) if zkey else None,
                  ops=bool(getattr(a, "ops", False)))


if __name__ == "__main__":
    if sys.argv[1] == "--compile-pass":
        sys.exit(compile_pass_main(sys.argv[2], sys.argv[3], sys.argv[4] == "ops"))
    run_step(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "cpu")
