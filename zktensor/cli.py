"""The ``zktensor`` command line.

    zktensor prove circuit.zkey witness.wtns proof.json public.json [--r1cs circuit.r1cs]
                   [--no-verify] [--no-check] [--profile] [--trace trace.json] [--device cpu|cuda]
                   [--engine auto|numpy|tensor] [--serve | --no-serve]
                   (the witness is checked against the .r1cs, naming the failing constraint,
                   when --r1cs is given; the proof is verified before it is written; in this
                   process without torch where `groth16.numpy_prover` can, `_prove_numpy`)
    zktensor verify verification_key.json public.json proof.json
    zktensor setup circuit.r1cs circuit.zkey [--vk verification_key.json] [--curve bn254|bls12_381]
    zktensor demo [--profile] [--trace trace.json] [--out DIR]

``prove`` takes rapidsnark's arguments in rapidsnark's order. Exit status: 0 on
success (``verify``: 0 valid, 1 invalid); 1 when proving fails (a witness that
does not satisfy the circuit, a file that is not what it should be); 2 for bad
usage and, for ``verify``, for inputs that are not a key, public signals and a
proof at all (so 1 keeps snarkjs's meaning, "invalid proof"); 3 for an unexpected
error, reported on one line (``ZKTENSOR_TRACEBACK=1`` shows the traceback); 130
when interrupted. ``prove`` checks its output paths before any work and verifies
every proof before writing it (``--no-verify``: not).

Subcommands are the entries of ``COMMANDS``: name -> ``Command(help, configure,
run)``, where ``configure(parser)`` adds the arguments and ``run(args)`` returns the
exit status. Another module adds one with ``register(...)`` (``autotune``,
``zkml``); modules named in ``LAZY`` are imported only when their command is
used, so ``zktensor verify`` does not load the compiler.

``prove``'s and ``serve``'s arguments are data (``PROVE_ARGS``, ``SERVE_ARGS``): argparse
is built from them, and ``quick_args`` reads a plain command line (exact long options,
the positionals) with them, without importing argparse (with re, gettext and locale, a good part of the thin
client's start-up); anything else (help, an abbreviation, a mistake) goes to argparse,
which parses it or says what is wrong.
"""
from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False           # typing's flag without importing typing (the thin client's start-up)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable     # collections' import is start-up time too


class Command:
    """A subcommand: its help line, ``configure(parser)`` and ``run(args) -> exit status``.
    (A plain class: ``dataclasses`` would add its import, and ``inspect``'s, to every
    start-up, the service's thin client included.)"""
    __slots__ = ("help", "configure", "run")

    def __init__(self, help: str, configure: Callable[[argparse.ArgumentParser], None],
                 run: Callable[[argparse.Namespace], int]):
        self.help, self.configure, self.run = help, configure, run


COMMANDS: dict[str, Command] = {}

# Subcommands defined in other modules: name -> (module, help). The module must call
# register(name, ...) when imported. Kept here so `zktensor --help` lists them
# without importing anything heavy.
LAZY: dict[str, tuple[str, str]] = {
    "autotune": ("zktensor.tune.cli", "tune kernel parameters for this device"),
    "zkml": ("zktensor.zkml.cli", "compile a PyTorch model (torch.export .pt2) to a circuit and witness"),
}


def register(name: str, help: str, configure, run) -> None:
    COMMANDS[name] = Command(help, configure, run)


TRACEBACK_ENV = "ZKTENSOR_TRACEBACK"
INTERNAL_ERROR = 3      # an unexpected exception (never 1: for verify that means "invalid proof")


def _err(msg: str) -> None:
    # one line, bounded: a message may quote a hostile input
    msg = " ".join(str(msg).split())
    if len(msg) > 600:
        msg = msg[:560] + " ... " + msg[-30:]
    print(f"zktensor: error: {msg}", file=sys.stderr)


# -- prove ------------------------------------------------------------------------------------


SUPPRESS = "==SUPPRESS=="      # argparse.SUPPRESS's value: an argument left out of the help

PROVE_ARGS: list[tuple[str, dict]] = [
    ("zkey", dict(help="proving key (snarkjs .zkey)")),
    ("witness", dict(help="witness (circom .wtns)")),
    ("proof", dict(help="where to write proof.json")),
    ("public", dict(help="where to write public.json")),
    ("--r1cs", dict(help="the circuit's .r1cs: checked against the key, then the witness against "
                         "every constraint, naming the first failing one")),
    ("--verify", dict(action="store_true", help=SUPPRESS)),     # the default now
    ("--no-verify", dict(action="store_true",
                         help="do not verify the proof before writing it (default: every proof is verified, "
                              "and one that does not verify is not written)")),
    ("--no-check", dict(action="store_true", help="no witness check and no verification (as snarkjs and "
                                                  "rapidsnark)")),
    ("--profile", dict(action="store_true", help="print time and peak memory per graph node")),
    ("--trace", dict(metavar="FILE", help="write a Chrome trace of the prover graph (implies --profile; "
                                          "through the service too, written with the proof)")),
    ("--device", dict(help="cpu or cuda (default: cuda when present). Proves in this process: "
                           "a running service keeps the device it started with (a note says so)")),
    ("--workers", dict(type=int, help="scheduler threads (1: one node at a time, no helper process); "
                                      "the service honours it too")),
    ("--no-helper", dict(action="store_true",
                         help="prove in this process, not through a running service (a note says so), every "
                              "MSM in it (a proof in this process runs no MSM helper process anyway: for one "
                              "proof the fork costs more than it saves; the service runs one beside its "
                              "resident keys)")),
    ("--engine", dict(choices=("auto", "numpy", "tensor"), default="auto",
                      help="in this process: `numpy` proves without importing torch, over the key's tables "
                           "in the table cache (made by its first proof; CPUs with AVX-512, domains up to "
                           "2^18); `tensor` with the tensor prover; `auto` (default): numpy where it can, "
                           "else tensor, and tensor for --profile, --trace, --device cuda and --workers")),
    # "group": one mutually exclusive group
    ("--serve", dict(action="store_true", group="serve",
                     help="prove through the prover service (`zktensor serve`), starting it if it is not "
                          "running (default: through it when it runs, else in this process); not with "
                          "--device or --no-helper")),
    ("--no-serve", dict(action="store_true", group="serve", help="prove in this process even when a service runs")),
]
"""``prove``'s arguments: (name, argparse's add_argument keywords, and "group")."""


def add_table(p: argparse.ArgumentParser, table: list[tuple[str, dict]]) -> None:
    """The arguments of ``table`` added to ``p`` (entries with the same "group" in one
    mutually exclusive group)."""
    import argparse
    groups = {}
    for name, kw in table:
        kw = dict(kw)
        group = kw.pop("group", None)
        if kw.get("help") == SUPPRESS:
            kw["help"] = argparse.SUPPRESS          # argparse tests it by identity
        if group is not None and group not in groups:
            groups[group] = p.add_mutually_exclusive_group()
        (p if group is None else groups[group]).add_argument(name, **kw)


def _dest(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


class Args:
    """argparse.Namespace's role for `quick_args` (argparse and types are start-up time)."""

    def __init__(self, **values):
        self.__dict__.update(values)


def quick_args(table: list[tuple[str, dict]], argv: list[str], command: str) -> Args | None:
    """``argv`` parsed by ``table`` with argparse's meaning, for a plain command line only:
    each option spelled out (``--opt value``, ``--opt=value``, a flag), a value not starting
    with "-" unless after "=", every positional given and none starting with "-", at most one
    option of a group. None for anything else (``-h``, an abbreviation, ``--``, a bad value,
    a missing or extra argument), which argparse is to parse (``main``)."""
    options = {name: kw for name, kw in table if name.startswith("-")}
    names = [name for name, _ in table if not name.startswith("-")]
    values = {"command": command}
    for name, kw in options.items():
        values[_dest(name)] = kw.get("default", False if kw.get("action") == "store_true" else None)
    positionals, groups = [], {}
    tokens = iter(argv)
    for tok in tokens:
        if not tok.startswith("-"):
            positionals.append(tok)
            continue
        name, eq, value = tok.partition("=")
        kw = options.get(name)
        if kw is None:
            return None
        if kw.get("action") == "store_true":
            if eq:
                return None
            value = True
        else:
            if not eq:
                value = next(tokens, None)
                if value is None or value.startswith("-"):
                    return None
            if "type" in kw:
                try:
                    value = kw["type"](value)
                except ValueError:
                    return None
            if "choices" in kw and value not in kw["choices"]:
                return None
        if "group" in kw and groups.setdefault(kw["group"], name) != name:
            return None
        values[_dest(name)] = value
    if len(positionals) != len(names):
        return None
    values.update(zip(names, positionals))
    return Args(**values)


def _prove_args(p: argparse.ArgumentParser) -> None:
    add_table(p, PROVE_ARGS)


def _prove(a: argparse.Namespace) -> int:
    # outputs first, before any work: stdlib only, like the service client below
    from .groth16.outputs import OutputError, check_outputs
    try:
        check_outputs([a.proof, a.public] + ([a.trace] if a.trace else []),
                      inputs=[a.zkey, a.witness, a.r1cs], what=["proof", "public signals", "trace"])
    except OutputError as e:
        _err(str(e))
        return 2
    if a.workers is not None and not 1 <= a.workers <= 256:
        _err(f"--workers {a.workers}: expected 1 to 256 threads")
        return 2
    # the service first: the client imports neither torch nor numpy (`zktensor.serve.client`);
    # it proves on its own device with its own helper, so these two prove here
    here_only = [flag for flag, given in (("--device", a.device), ("--no-helper", a.no_helper)) if given]
    if a.serve and here_only:
        _err(f"--serve with {' and '.join(here_only)}: the service keeps the device and helper it started "
             "with (zktensor serve --device ...); leave --serve out to prove in this process")
        return 2
    if not a.no_serve and not here_only:
        from .serve.client import prove_via_service
        status = prove_via_service(a, start_if_needed=a.serve)
        if status is not None:
            return status
    elif not a.no_serve:
        from .serve.client import running
        if running():
            print(f"zktensor: note: {' and '.join(here_only)}: proving in this process, not through the "
                  "running prover service", file=sys.stderr)
    from .groth16.formats import FormatError
    from .groth16.formats.errors import WitnessError
    status = _prove_numpy(a)
    if status is not None:
        return status
    from .groth16.key import PLAIN
    from .groth16.prover import Prover
    profile = a.profile or bool(a.trace)
    try:
        t0 = time.perf_counter()
        # one proof: GZKP's weighted bases would take longer to build than they save, and the
        # MSM helper's fork and cold start than its parallel MSMs (the commit that made it so)
        prover = Prover(a.zkey, r1cs=a.r1cs, device=a.device, workers=a.workers, checkpoint=PLAIN, helper=False)
        t1 = time.perf_counter()
        prover.prove_to_files(a.witness, a.proof, a.public, check=not a.no_check,
                              verify=not (a.no_verify or a.no_check), profile=profile)
        t2 = time.perf_counter()
    except WitnessError as e:
        _err(str(e))
        return 1
    except (FormatError, ValueError, OSError) as e:
        _err(str(e))
        return 1
    if profile:
        print(f"load key {1e3 * (t1 - t0):.1f} ms, prove {1e3 * (t2 - t1):.1f} ms")
        print(prover.last_run.table())
    if a.trace:
        prover.last_run.write_trace(a.trace)
        print(f"trace written to {a.trace}")
    return 0


def _prove_numpy(a: argparse.Namespace) -> int | None:
    """`--engine numpy` (or `auto` where it can): the proof without torch
    (`groth16.numpy_prover`); None where the tensor prover is to prove instead."""
    tensor_only = [flag for flag, given in (("--profile", a.profile), ("--trace", a.trace),
                                            ("--device", a.device not in (None, "cpu")),
                                            ("--workers", a.workers is not None)) if given]
    if a.engine == "tensor" or (a.engine == "auto" and tensor_only):
        return None
    if tensor_only:
        _err(f"--engine numpy with {' and '.join(tensor_only)}: only the tensor prover has these")
        return 2
    from .groth16.formats import FormatError, read_wtns
    from .groth16.formats.errors import WitnessError
    from .groth16.numpy_prover import NumpyProver, Unavailable
    from .groth16.outputs import write_proof_pair
    try:
        prover = NumpyProver.load(a.zkey, r1cs=a.r1cs)
    except Unavailable as e:
        if a.engine == "numpy":
            _err(f"--engine numpy: {e}")
            return 1
        return None
    except (FormatError, ValueError, OSError) as e:
        _err(str(e))
        return 1
    try:
        proof, public = prover.prove(read_wtns(a.witness), check=not a.no_check,
                                     verify=not (a.no_verify or a.no_check))
        write_proof_pair(a.proof, a.public, proof, public)
    except (WitnessError, FormatError, ValueError, OSError) as e:
        _err(str(e))
        return 1
    return 0


# -- verify -----------------------------------------------------------------------------------


def _verify_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("vk", help="verification_key.json")
    p.add_argument("public", help="public.json")
    p.add_argument("proof", help="proof.json")


def _verify(a: argparse.Namespace) -> int:
    from .groth16.formats import FormatError
    from .groth16.verifier import verify
    try:
        ok = verify(a.vk, a.public, a.proof)
    except (FormatError, ValueError, OSError) as e:
        _err(str(e))
        return 2
    print("OK!" if ok else "Invalid proof")
    return 0 if ok else 1


# -- setup ------------------------------------------------------------------------------------


def _setup_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("r1cs", help="the circuit (circom .r1cs)")
    p.add_argument("zkey", help="where to write the proving key")
    p.add_argument("--vk", help="where to write verification_key.json (default: next to the "
                                "zkey, <name>.vk.json)")
    p.add_argument("--curve", help="bn254 (bn128) or bls12_381 (bls12381): must match the .r1cs's field")
    p.add_argument("--device", help="cpu or cuda (default: cuda when present)")


def _setup(a: argparse.Namespace) -> int:
    from .groth16.outputs import OutputError, check_outputs
    from .groth16.setup import default_vk_path
    vk = a.vk if a.vk is not None else default_vk_path(a.zkey)
    try:         # before the work, as prove: outputs that are missing, unwritable or an input
        check_outputs([a.zkey, vk], inputs=[a.r1cs], what=["proving key", "verification key"])
    except OutputError as e:
        _err(str(e))
        return 2
    from .groth16.formats import FormatError
    from .groth16.setup import INSECURE_WARNING, setup
    try:         # the warning once the circuit is accepted: a refused input gets one line
        res = setup(a.r1cs, a.zkey, vk_path=vk, curve=a.curve, device=a.device,
                    on_start=lambda: print(INSECURE_WARNING, file=sys.stderr))
    except (FormatError, ValueError, OSError) as e:
        _err(str(e))
        return 1
    print(f"wrote {res.zkey_path} and {res.vk_path} ({res.curve}, domain 2^{res.power}, "
          f"{res.n_vars} wires) in {res.seconds:.1f} s")
    return 0


# -- demo -------------------------------------------------------------------------------------


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", action="store_true", help="also print the per-node table")
    p.add_argument("--trace", metavar="FILE", help="write a Chrome trace of the prover graph")
    p.add_argument("--out", metavar="DIR", help="keep proof.json and public.json in DIR")
    p.add_argument("--device", help="cpu or cuda (default: cuda when present)")


def _demo_outputs(a: argparse.Namespace) -> str | None:
    """Check --out and --trace before the key loads (as prove does): the error, or None.
    --out is made here (with its parents, as the demo would) so that the files in it can
    be checked, a trace inside it included."""
    from .groth16.demo import demo_files
    from .groth16.outputs import OutputError, check_outputs
    outputs, what = [], []
    if a.out is not None:
        if a.out == "":
            return "--out: the directory path is empty"
        if os.path.lexists(a.out) and not os.path.isdir(a.out):
            return f"{a.out}: exists and is not a directory (--out names a directory for proof.json and public.json)"
        try:
            os.makedirs(a.out, exist_ok=True)
        except OSError as e:
            return f"{a.out}: cannot make the directory ({e.strerror or e})"
        outputs += [os.path.join(a.out, "proof.json"), os.path.join(a.out, "public.json")]
        what += ["proof", "public signals"]
    if a.trace is not None:
        outputs.append(a.trace)
        what.append("trace")
    try:
        inputs = list(demo_files().values())
    except FileNotFoundError as e:
        return str(e)
    try:
        check_outputs(outputs, inputs=inputs, what=what)
    except OutputError as e:
        return str(e)
    return None


def _demo(a: argparse.Namespace) -> int:
    bad = _demo_outputs(a)
    if bad is not None:
        _err(bad)
        return 2
    from .groth16.demo import run_demo
    return run_demo(profile=a.profile, trace=a.trace, out=a.out, device=a.device)


register("prove", "make a Groth16 proof (rapidsnark's arguments)", _prove_args, _prove)
register("verify", "verify a Groth16 proof (exit 0 valid, 1 invalid)", _verify_args, _verify)
register("setup", "development Groth16 setup: zkey + verification key (INSECURE: one party)",
         _setup_args, _setup)
register("demo", "prove and verify the bundled example circuit", _demo_args, _demo)


# -- serve, warmup ----------------------------------------------------------------------------


SERVE_ARGS: list[tuple[str, dict]] = [
    ("--status", dict(action="store_true", group="mode", help="report the running service and its resident keys")),
    ("--stop", dict(action="store_true", group="mode", help="stop the running service")),
    ("--detach", dict(action="store_true", group="mode", help="start the service in the background")),
    ("--memory", dict(metavar="SIZE", help="memory budget for resident keys, e.g. 6G (default: half of physical "
                                           "memory); least recently used keys are evicted past it")),
    ("--tcp", dict(type=int, metavar="PORT", help="also listen on 127.0.0.1:PORT (0: any free port); requests "
                                                  "must carry the token written to the run directory's serve.token")),
    ("--device", dict(help="cpu or cuda (default: cuda when present)")),
    ("--plain", dict(action="store_true", help="keep plain MSM tables (less memory, slower proofs) instead of "
                                               "GZKP's weighted ones")),
]
"""``serve``'s arguments, as ``PROVE_ARGS``: ``serve --status`` and ``--stop`` are thin
clients too."""


def _serve_args(p: argparse.ArgumentParser) -> None:
    add_table(p, SERVE_ARGS)


def _serve(a: argparse.Namespace) -> int:
    from .serve.command import run
    return run(a)


register("serve", "a prover service keeping proving keys resident (--status, --stop)", _serve_args, _serve)


def _warmup_args(p: argparse.ArgumentParser) -> None:
    from .groth16.warmup import configure
    configure(p)


def _warmup(a: argparse.Namespace) -> int:
    from .groth16.warmup import run
    return run(a)


register("warmup", "compile the kernels a Groth16 proof needs (once per machine), with progress",
         _warmup_args, _warmup)


# -- main -------------------------------------------------------------------------------------


def _formatter():
    """argparse's help formatter, its width from `os.get_terminal_size`: argparse makes one
    for every argument added (to check its metavar), and the first imported shutil (with
    bz2, lzma, fnmatch) for the width, in every start-up."""
    import argparse

    class Formatter(argparse.HelpFormatter):
        def __init__(self, prog, **kw):
            kw.setdefault("width", _columns() - 2)
            super().__init__(prog, **kw)
    return Formatter


def _columns() -> int:
    """The terminal's width, as shutil.get_terminal_size finds it ($COLUMNS, stdout, 80)."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    except (AttributeError, ValueError, OSError):
        return 80


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, that subcommand alone (its arguments need not
    be parsed beside the others' (`warmup`'s pull in the compiler's cache module, and the
    thin client must not), and each subparser costs start-up time)."""
    import argparse
    formatter = _formatter()
    p = argparse.ArgumentParser(prog="zktensor", description="zktensor: Groth16 over circom/snarkjs files, "
                                "on tensors", formatter_class=formatter)
    # prog given: argparse would build a help formatter to work it out
    sub = p.add_subparsers(dest="command", metavar="command", prog="zktensor")
    names = [only] if only else list(COMMANDS) + [n for n in LAZY if n not in COMMANDS]
    for name in names:
        cmd = COMMANDS.get(name)
        sp = sub.add_parser(name, help=cmd.help if cmd else LAZY[name][1], formatter_class=formatter)
        if cmd:
            cmd.configure(sp)
        else:
            sp.add_argument("args", nargs=argparse.REMAINDER)
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in LAZY and argv[0] not in COMMANDS:
        try:
            __import__(LAZY[argv[0]][0])
        except ImportError as e:
            _err(f"the {argv[0]} command is not available ({e})")
            return 2
    quick = {"prove": PROVE_ARGS, "serve": SERVE_ARGS}.get(argv[0]) if argv else None
    a = quick_args(quick, argv[1:], argv[0]) if quick else None
    if a is None:
        p = parser(only=argv[0] if argv and argv[0] in COMMANDS else None)
        a = p.parse_args(argv)
    if not a.command:
        p.print_help()
        return 2
    cmd = COMMANDS.get(a.command)
    if cmd is None:
        _err(f"the {a.command} command is not available")
        return 2
    try:
        return cmd.run(a)
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except Exception as e:      # a bug or an input no check foresaw: one line, not a traceback
        if os.environ.get(TRACEBACK_ENV, "") not in ("", "0"):
            raise
        _err(f"{a.command} failed: {type(e).__name__}: {e} (an unexpected error; "
             f"{TRACEBACK_ENV}=1 shows the traceback)")
        return INTERNAL_ERROR


def entry() -> None:
    """The `zktensor` command: `main`, then a quick exit.

    Interpreter finalisation in a process that imported torch tears down thousands of
    modules and the destructors of its CUDA libraries: time that every in-process
    `zktensor prove` paid after its files were written. Nothing is left to do by then, so
    this runs what finalisation must (the exit handlers: the MSM helper's stop, logging's
    flush, multiprocessing's joins), flushes the standard streams and leaves without it.
    Idle worker threads end with the process; none of ours holds unwritten work (the proof
    and public files are written and renamed in place before `main` returns).
    """
    try:
        rc = main()
    except SystemExit as e:                # argparse's --help and usage errors
        rc = e.code
    if rc is None:
        rc = 0
    elif not isinstance(rc, int):          # sys.exit("message"): print it, as Python would
        print(rc, file=sys.stderr)
        rc = 1
    import atexit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):      # a closed pipe: nothing more can reach it
            pass
    os._exit(rc & 0xFF)


if __name__ == "__main__":  # pragma: no cover
    # `python -m zktensor.cli`: run the importable module's entry, the one that lazily
    # loaded commands (autotune, zkml) register into, not this __main__ copy
    from zktensor.cli import entry as _entry
    _entry()
