"""`zktensor prove/verify/setup/demo` as a user runs them: arguments, files, exit codes."""
import json
import os
import subprocess
import sys


from fixture_support import ROOT
from zktensor.cli import COMMANDS, LAZY, main


def cli(*args, timeout=900):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "zktensor.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env=env)


def test_subcommands_are_a_dict():
    assert {"prove", "verify", "setup", "demo"} <= set(COMMANDS)
    assert {"autotune", "zkml"} <= set(LAZY)
    # every lazily loaded command's module exists (`zktensor bench` once named one that did not)
    import importlib.util
    assert all(importlib.util.find_spec(module) for module, _help in LAZY.values())
    assert main([]) == 2


def test_entry_exits_quickly_but_completely():
    """`zktensor` (cli.entry) leaves with os._exit after main: the exit handlers still run,
    piped output is flushed, and exit codes are main's (argparse's included)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = ("import atexit, sys; from zktensor import cli; "
            "atexit.register(lambda: print('handler ran', flush=False)); "
            "sys.argv = ['zktensor'] + sys.argv[1:]; cli.entry(); print('not reached')")
    for args, rc, out in ((["--help"], 0, "usage: zktensor"), ([], 2, "usage: zktensor"),
                          (["prove"], 2, ""), (["verify", "no-vk", "no-pub", "no-proof"], 2, "")):
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT,
                           env=env, timeout=300)
        assert r.returncode == rc, (args, r.stdout, r.stderr)
        assert out in r.stdout and r.stdout.rstrip().endswith("handler ran"), (args, r.stdout)
        assert "not reached" not in r.stdout


def test_prove_and_verify_exit_codes(fixtures, snarkjs, tmp_path):
    fx = fixtures["multi_public"]
    proof, public, trace = tmp_path / "proof.json", tmp_path / "public.json", tmp_path / "trace.json"
    r = cli("prove", fx.zkey, fx.wtns, proof, public, "--r1cs", fx.r1cs, "--profile", "--trace", trace,
            "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "msm_h" in r.stdout and "critical path" in r.stdout
    # one proof in this process: no MSM helper process (its fork costs more than it saves)
    assert "msm_b2" in r.stdout and "msm_helper" not in r.stdout
    assert json.loads(trace.read_text())["traceEvents"]
    assert public.read_bytes() == fx.public.read_bytes()
    assert snarkjs.verify_cli(fx.vk, public, proof)
    # --no-helper: the same, said explicitly
    r = cli("prove", fx.zkey, fx.wtns, proof, public, "--profile", "--no-helper", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert "msm_b2" in r.stdout and "msm_helper" not in r.stdout
    assert snarkjs.verify_cli(fx.vk, public, proof)
    # ours verifies ours and snarkjs's proof
    assert cli("verify", fx.vk, public, proof).returncode == 0
    assert cli("verify", fx.vk, fx.public, fx.proof).returncode == 0
    # a wrong public input: invalid (1), as snarkjs says
    bad_pub = tmp_path / "bad_public.json"
    vals = json.loads(public.read_text())
    vals[0] = str(int(vals[0]) + 1)
    bad_pub.write_text(json.dumps(vals))
    r = cli("verify", fx.vk, bad_pub, proof)
    assert r.returncode == 1 and "Invalid" in r.stdout
    assert not snarkjs.verify_cli(fx.vk, bad_pub, proof)
    # not a proof at all: 2
    (tmp_path / "junk.json").write_text("{")
    r = cli("verify", fx.vk, public, tmp_path / "junk.json")
    assert r.returncode == 2 and "junk.json" in r.stderr


def test_prove_refuses_bad_witness_and_truncated_files(fixtures, tmp_path):
    from zktensor.groth16.formats import read_r1cs, read_wtns, write_wtns
    fx = fixtures["multiplier"]
    w = list(read_wtns(fx.wtns))
    rc = read_r1cs(fx.r1cs)
    w[-1] = (w[-1] + 1) % rc.prime
    bad = tmp_path / "bad.wtns"
    write_wtns(bad, w, rc.prime)
    proof = tmp_path / "proof.json"
    r = cli("prove", fx.zkey, bad, proof, tmp_path / "public.json", "--r1cs", fx.r1cs)
    assert r.returncode == 1
    assert f"constraint {rc.first_unsatisfied(w)} " in r.stderr
    assert not proof.exists()
    cut = tmp_path / "cut.zkey"
    cut.write_bytes(fx.zkey.read_bytes()[:50])
    r = cli("prove", cut, fx.wtns, proof, tmp_path / "public.json")
    assert r.returncode == 1 and "cut.zkey" in r.stderr
    assert not proof.exists()


def test_demo_runs_offline():
    r = cli("demo", "--device", "cpu")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verify: OK" in r.stdout and "msm_h" in r.stdout


def test_demo_checks_out_and_trace_before_the_key_loads(tmp_path):
    """--out and --trace are checked first (one line, exit 2), not after the key has loaded
    (a file given as --out had ended in os.makedirs's error, exit 3)."""
    import contextlib
    import io
    from zktensor.groth16.demo import demo_files
    (tmp_path / "file").write_text("x")
    cases = [(["--out", tmp_path / "file"], f"{tmp_path / 'file'}: exists and is not a directory"),
             (["--out", tmp_path / "file" / "sub"], "cannot make the directory"),
             (["--trace", tmp_path / "nodir" / "t.json"], f"directory {tmp_path / 'nodir'} does not exist"),
             (["--trace", tmp_path], "is a directory"),
             (["--out", tmp_path / "o", "--trace", tmp_path / "o" / "proof.json"], "two outputs are the same file"),
             (["--trace", demo_files()["vk"]], "is also an input"),
             (["--out", demo_files()["zkey"].parent], "public.json: is also an input"),
             (["--out", ""], "--out: the directory path is empty")]
    for args, message in cases:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()) as out:
            rc = main(["demo", *map(str, args)])
        assert rc == 2, (args, err.getvalue())
        assert err.getvalue().count("\n") == 1 and message in err.getvalue(), (args, err.getvalue())
        assert out.getvalue() == ""                     # the demo did not start
    assert (tmp_path / "file").read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["file", "o"]
    # as a process: refused before torch is imported
    code = ("import sys; from zktensor.cli import main; rc = main(sys.argv[1:]); "
            "print('TORCH', 'torch' in sys.modules); sys.exit(rc)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code, "demo", "--out", str(tmp_path / "file")], capture_output=True,
                       text=True, timeout=120, cwd=ROOT, env=env)
    assert r.returncode == 2 and "TORCH False" in r.stdout, r.stdout + r.stderr


def _argparse_prove(argv):
    """argparse's reading of `zktensor prove argv`: a dict, or None where it refuses it."""
    from zktensor.cli import parser
    try:
        return vars(parser(only="prove").parse_args(["prove", *argv]))
    except SystemExit:
        return None


def test_quick_args_read_prove_as_argparse_does(capsys):
    """`quick_args` (prove's command line without importing argparse) gives argparse's values
    wherever it answers, and answers the plain lines; anything else it leaves to argparse."""
    import random
    from zktensor.cli import PROVE_ARGS, quick_args
    files = ["k.zkey", "w.wtns", "p.json", "q.json"]
    plain = [files, [*files, "--r1cs", "c.r1cs", "--no-check"], ["--profile", *files[:2], "--trace=t.json", *files[2:]],
             [*files, "--workers", "3", "--engine", "numpy", "--no-serve", "--device", "cpu"],
             [*files, "--serve", "--serve", "--trace=-odd.json", "--workers", "03", "--no-verify", "--verify"],
             ["", "w", "p", "q", "--r1cs="], [*files, "--no-helper", "--engine=tensor"]]
    left = [[], files[:3], [*files, "extra"], [*files, "-h"], [*files, "--help"], [*files, "--no-ser"],
            [*files, "--serve", "--no-serve"], [*files, "--workers", "x"], [*files, "--workers", "-1"],
            [*files, "--engine", "gpu"], [*files, "--trace"], [*files, "--trace", "-t"], [*files, "--profile=1"],
            ["--", *files], ["-", *files[1:]], [*files, "--unknown"], [*files, "-x"]]
    for argv in plain:
        quick = quick_args(PROVE_ARGS, argv, "prove")
        assert quick is not None, argv
        assert vars(quick) == _argparse_prove(argv), argv
    for argv in left:
        assert quick_args(PROVE_ARGS, argv, "prove") is None, argv
    # random lines from the table's own tokens: equal wherever both answer
    tokens = files + ["--r1cs", "c.r1cs", "--no-verify", "--no-check", "--profile", "--trace", "t.json", "--workers",
                      "2", "--engine", "numpy", "--serve", "--no-serve", "--device", "cuda", "--no-helper", "-h"]
    rng, answered = random.Random(7), 0
    for _ in range(300):
        argv = rng.sample(tokens, rng.randint(0, 9))
        quick = quick_args(PROVE_ARGS, argv, "prove")
        if quick is not None:
            answered += 1
            assert vars(quick) == _argparse_prove(argv), argv
    assert answered > 0
    capsys.readouterr()


def test_a_plain_prove_line_does_not_import_argparse(tmp_path):
    code = ("import sys; from zktensor import cli; rc = cli.main(sys.argv[1:]); "
            "print('ARGPARSE', 'argparse' in sys.modules); sys.exit(rc)")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    missing = [str(tmp_path / n) for n in ("k.zkey", "w.wtns")]
    r = subprocess.run([sys.executable, "-c", code, "prove", *missing, str(tmp_path / "p.json"),
                        str(tmp_path / "q.json"), "--no-serve"], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=300)
    assert "ARGPARSE False" in r.stdout and r.returncode == 1 and "k.zkey" in r.stderr, (r.stdout, r.stderr)
    r = subprocess.run([sys.executable, "-c", code, "prove", "--no-ser"], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 2 and "required" in r.stderr          # argparse's own message
