"""The fuzz suite: every case of ``cases.all_cases`` through the real command line.

For each bad input: a non-zero exit status, exactly one line on stderr that names
the file at fault, no traceback, the inputs and the earlier outputs untouched. Legal
but unusual encodings prove (or verify), and what is written verifies; for ``setup``,
a circuit that reads well gets a key and the verification key of that key. The CLI runs
in this process (``zktensor.cli.main``: one torch import for all cases); a subset
runs as ``python -m zktensor.cli`` for the real exit status and stderr.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import cases as gen
from unwritable import unwritable_dir

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ZKT_FIXTURES_BUILD", ROOT / "tests" / "fixtures" / "build"))
CIRCUIT, OTHER = "multiplier", "multi_public"
NAMES = {"zkey": "circuit.zkey", "wtns": "witness.wtns", "r1cs": "circuit.r1cs",
         "proof": "proof_in.json", "public": "public_in.json", "vk": "vk.json"}
OLD_PROOF, OLD_PUBLIC = "OLD PROOF\n", "OLD PUBLIC\n"
OLD = {"proof.json": OLD_PROOF, "public.json": OLD_PUBLIC, "key.zkey": "OLD KEY\n", "vk_out.json": "OLD VK\n"}
SETUP = ("setup", "setup_paths")

pytestmark = pytest.mark.snarkjs     # the files come from scripts/fixtures.sh


def _files(name: str) -> dict:
    d = BUILD / name
    r1cs = next(d.glob("*.r1cs"), None)
    paths = {"zkey": d / "circuit_final.zkey", "wtns": d / "witness.wtns", "r1cs": r1cs,
             "proof": d / "proof.json", "public": d / "public.json", "vk": d / "verification_key.json"}
    if not all(p is not None and p.exists() for p in paths.values()):
        pytest.skip(f"fixture {name} not built (scripts/fixtures.sh)")
    return {k: p.read_bytes() for k, p in paths.items()}


def _outside_g2(curve="bn254"):
    """A point of the twist that is not in G2 (found by search; the cofactor is ~2^254)."""
    from zktensor.algebra.curves import group, in_subgroup, is_on_curve
    G = group(f"{curve}.g2")
    F = G.F
    for i in range(1, 100):
        x = F.elem(i, 1)
        y = F.sqrt(F.add(F.mul(F.mul(x, x), x), G.b))
        if y is not None and is_on_curve(G, (x, y)) and not in_subgroup(G, (x, y)):
            return (x, y)
    raise AssertionError("no point found")


_CASES = None


def _all():
    global _CASES
    if _CASES is None:
        _CASES = gen.all_cases(_files(CIRCUIT), _files(OTHER), {"g2_outside": _outside_g2()})
    return _CASES


def _ids():
    try:
        return [c.name for c in _all()]
    except BaseException:           # fixtures missing at collection: one skipped case
        return []


@pytest.fixture(scope="module")
def base():
    return _files(CIRCUIT)


def _lay_out(case, base, tmp: Path, unwritable: Path | None = None) -> dict:
    """The case's files in tmp; returns role -> path (inputs) and the output paths."""
    paths = {"@unwritable": str(unwritable)}
    for role, name in NAMES.items():
        p = tmp / name
        p.write_bytes(case.files.get(role, base[role]))
        paths[role] = str(p)
    (tmp / "sub").mkdir()
    (tmp / "link.json").symlink_to(paths["zkey"])
    for name, text in OLD.items():      # the earlier outputs, which a failure must leave
        (tmp / name).write_text(text)
    paths["out_proof"], paths["out_public"] = str(tmp / "proof.json"), str(tmp / "public.json")
    paths["out_key"], paths["out_vk"] = str(tmp / "key.zkey"), str(tmp / "vk_out.json")
    return paths


def _needs_unwritable(case) -> bool:
    return any(o.startswith("@unwritable/") for o in case.outputs or ())


def _argv(case, paths, tmp: Path) -> list[str]:
    if case.command == "verify":
        return ["verify", paths["vk"], paths["public"], paths["proof"]]
    if case.command in SETUP:
        key, vk = paths["out_key"], paths["out_vk"]
        if case.command == "setup_paths":
            key, vk = (_out_path(o, paths, tmp) for o in case.outputs)
        return ["setup", paths["r1cs"], key, "--vk", vk, "--device", "cpu"]
    outs = [paths["out_proof"], paths["out_public"]]
    if case.command == "paths":
        outs = [_out_path(o, paths, tmp) for o in case.outputs]
    argv = ["prove", paths["zkey"], paths["wtns"], *outs, "--no-serve", "--no-helper", "--device", "cpu"]
    if case.command in ("prove_r1cs", "paths"):
        argv += ["--r1cs", paths["r1cs"]]
    return argv


def _out_path(o: str, paths, tmp: Path) -> str:
    if o == "":
        return ""
    if o.startswith("@unwritable/"):
        return os.path.join(paths["@unwritable"], o.split("/", 1)[1])
    if o.startswith("@"):
        return str(tmp / "link.json") if o == "@link" else paths[o[1:]]
    return o if o.startswith("/") else str(tmp / o)


def _blamed(case, paths, tmp: Path) -> str:
    if case.command in ("paths", "setup_paths"):
        return _out_path(case.blame, paths, tmp) if case.blame != "proof path" else "proof path"
    return paths[case.blame]


def run_in_process(argv) -> tuple[int, str, str]:
    from zktensor.cli import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _check(case, rc, out, err, paths, tmp, base):
    label = f"{case.name}: exit {rc}, stderr {err!r}"
    assert "Traceback" not in err and "Traceback" not in out, label
    for role, name in NAMES.items():       # inputs untouched
        assert (tmp / name).read_bytes() == case.files.get(role, base[role]), label
    if rc == 0:
        assert case.expect in ("ok", "fail_or_ok"), label
        if case.command in SETUP:
            _check_setup_outputs(tmp, label)
        elif case.command != "verify":
            from zktensor.groth16.verifier import verify
            assert (tmp / "proof.json").read_text() != OLD_PROOF, label
            assert verify(paths["vk"], str(tmp / "public.json"), str(tmp / "proof.json")), label
        return
    assert case.expect in ("fail", "fail_or_ok"), label
    if case.command != "paths" or case.blame != "/dev/null":
        for name, text in OLD.items():
            assert (tmp / name).read_text() == text, label
    assert not [n for n in os.listdir(tmp) if ".zktensor-" in n], label     # no temporary left
    if case.command == "verify" and rc == 1:         # a well-formed proof that is invalid
        assert err == "" and "Invalid proof" in out, label
        return
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zktensor: error: "), label
    if case.expect == "fail":
        assert _blamed(case, paths, tmp) in lines[0], label


def _check_setup_outputs(tmp: Path, label: str) -> None:
    """A key was made: both files new, and the verification key is that key's."""
    import json

    from zktensor.groth16.formats import read_zkey
    from zktensor.groth16.vk import vk_json
    assert (tmp / "key.zkey").read_text(errors="replace") != OLD["key.zkey"], label
    assert json.loads((tmp / "vk_out.json").read_text()) == vk_json(read_zkey(tmp / "key.zkey")), label


@pytest.mark.parametrize("index", range(len(_ids())), ids=_ids())
def test_case_through_cli(index, base, tmp_path, monkeypatch):
    monkeypatch.setenv("ZKTENSOR_TABLE_CACHE", "off")
    case = _all()[index]
    with contextlib.ExitStack() as stack:
        unwritable = stack.enter_context(unwritable_dir(tmp_path))[0] if _needs_unwritable(case) else None
        paths = _lay_out(case, base, tmp_path, unwritable)
        rc, out, err = run_in_process(_argv(case, paths, tmp_path))
        _check(case, rc, out, err, paths, tmp_path, base)


SUBPROCESS = ["zkey: cut in section 7", "zkey: B2 point 1 outside the subgroup, --r1cs", "wtns: prime + 2",
              "r1cs: first coefficient changed (stale)", "proof: deep nesting", "public: 5000-digit number",
              "vk: deep unclosed", "paths: proof = the zkey", "setup r1cs: cut in section 2",
              "setup paths: vk = the r1cs"]


@pytest.mark.parametrize("name", SUBPROCESS)
def test_case_as_a_process(name, base, tmp_path):
    case = next(c for c in _all() if c.name == name)
    paths = _lay_out(case, base, tmp_path)
    env = dict(os.environ, PYTHONPATH=str(ROOT), ZKTENSOR_TABLE_CACHE="off")
    env.pop("ZKTENSOR_TRACEBACK", None)
    res = subprocess.run([sys.executable, "-m", "zktensor.cli", *_argv(case, paths, tmp_path)],
                         capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    err = "\n".join(l for l in res.stderr.splitlines() if not l.startswith("zktensor: compil"))
    assert res.returncode not in (0, 3), (name, res.returncode, err)
    _check(case, res.returncode, res.stdout, err, paths, tmp_path, base)


def test_unexpected_errors_are_one_line(monkeypatch):
    """A bug anywhere under a command: one line and exit 3; ZKTENSOR_TRACEBACK=1 re-raises."""
    from zktensor import cli

    def boom(a):
        raise RecursionError("maximum recursion depth exceeded\nsecond line")
    monkeypatch.setitem(cli.COMMANDS, "verify", cli.Command("x", cli.COMMANDS["verify"].configure, boom))
    monkeypatch.delenv("ZKTENSOR_TRACEBACK", raising=False)
    rc, out, err = run_in_process(["verify", "a", "b", "c"])
    assert rc == cli.INTERNAL_ERROR and err.count("\n") == 1 and "RecursionError" in err
    monkeypatch.setenv("ZKTENSOR_TRACEBACK", "1")
    with pytest.raises(RecursionError):
        run_in_process(["verify", "a", "b", "c"])
