"""The native thin client (zktensor/serve/native_client.c), end to end, against the service
and against a fake one that sends crafted replies.

Its oracle is the Python client: the same command lines give the same exit status and the
same error line, and its proofs pass the pairing verifier. The client is built here with
-Werror; its Python command is a wrapper that logs each hand-over (so a test can tell which
client did the work) and then runs ``python -m zktensor.cli``, or, with ``FAKE_FALLBACK=1``,
only logs and exits 42.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from serve_support import DEMO, REPO, Service, cli_env

from zktensor.serve import native, protocol

pytestmark = pytest.mark.skipif(native.compiler() is None, reason="no C compiler")


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("native")
    wrapper = d / "zktensor-py"
    wrapper.write_text("#!/bin/sh\n"
                       'printf "%s\\n" "$*" >> "$HANDOVER_LOG"\n'
                       'if [ "${FAKE_FALLBACK:-}" = 1 ]; then exit 42; fi\n'
                       f'exec "{sys.executable}" -m zktensor.cli "$@"\n')
    wrapper.chmod(0o755)
    native.build(str(d / "zktensor"), str(wrapper), flags=native.FLAGS + ["-Werror", "-pedantic"])
    return d / "zktensor"


def run(client: Path, args, env: dict, log: Path, cwd=REPO, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(client), *map(str, args)], env=dict(env, HANDOVER_LOG=str(log)), cwd=cwd,
                          capture_output=True, text=True, timeout=300, **kw)


def handed_over(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def demo_args(out: Path, tag: str = "", wtns=None, zkey=None):
    return ["prove", zkey or DEMO / "demo.zkey", wtns or DEMO / "demo.wtns", out / f"proof{tag}.json",
            out / f"public{tag}.json", "--r1cs", DEMO / "demo.r1cs"]


def valid(out: Path, tag: str = "") -> bool:
    from zktensor.groth16.verifier import verify
    return verify(DEMO / "verification_key.json", out / f"public{tag}.json", out / f"proof{tag}.json")


def test_proves_through_the_service_itself(service, client, tmp_path):
    log = tmp_path / "handover.log"
    before = service.status()["requests"]
    for extra in ([], ["--no-verify", "--workers", "2"], ["--no-check"], ["--verify", "--workers=1", "--serve"]):
        res = run(client, demo_args(tmp_path) + extra, service.env, log)
        assert res.returncode == 0 and res.stderr == "" and res.stdout == "", (extra, res)
        assert valid(tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["proof.json", "public.json"]   # no temporary left
    assert handed_over(log) == []
    assert service.status()["requests"] == before + 4 + 1          # four proofs, and this status


@pytest.mark.parametrize("case", ["missing dir", "output is input", "outputs alike", "missing witness",
                                  "corrupt key", "wrong witness", "relative and linked"])
def test_errors_match_the_python_client(service, client, tmp_path, case):
    """Same status, same one line, paths as typed, no file written."""
    real = tmp_path / "réal dir"                 # not ASCII: the reply's \\u escapes
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    (real / "corrupt.zkey").write_bytes((DEMO / "demo.zkey").read_bytes()[:1000])
    w = bytearray((DEMO / "demo.wtns").read_bytes())
    w[-5] ^= 0x01
    (real / "wrong.wtns").write_bytes(bytes(w))
    (real / "w.wtns").write_bytes((DEMO / "demo.wtns").read_bytes())
    key, wit = str(DEMO / "demo.zkey"), "link/w.wtns"
    args = {"missing dir": [key, wit, "nodir/p.json", "q.json"],
            "output is input": [key, wit, "link/w.wtns", "q.json"],
            "outputs alike": [key, wit, "p.json", "link/../p.json"],
            "missing witness": [key, "link/none.wtns", "p.json", "q.json"],
            "corrupt key": ["link/corrupt.zkey", wit, "p.json", "q.json"],
            "wrong witness": [key, "link/wrong.wtns", "p.json", "q.json", "--r1cs", DEMO / "demo.r1cs"],
            "relative and linked": ["link/corrupt.zkey", "link/w.wtns", "link/p.json", "q.json"]}[case]
    log = tmp_path / "handover.log"
    res = run(client, ["prove", *args], service.env, log, cwd=tmp_path)
    py = subprocess.run([sys.executable, "-m", "zktensor.cli", "prove", *map(str, args)], env=service.env,
                        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert handed_over(log) == []
    assert res.returncode == py.returncode and res.returncode in (1, 2), (res, py)
    assert res.stderr == py.stderr and res.stderr.startswith("zktensor: error: "), (res.stderr, py.stderr)
    assert len(res.stderr.splitlines()) == 1 and str(tmp_path) not in res.stderr
    assert not list(tmp_path.glob("*.json")) and not list(real.glob("*.json"))


@pytest.mark.parametrize("args", [["--help"], ["serve", "--bogus"], ["prove", "--help"],
                                  ["prove", "a.zkey", "w.wtns", "p.json"],          # one path short
                                  ["prove", "a.zkey", "w.wtns", "p.json", "q.json", "--workers", "0"],
                                  ["prove", "a.zkey", "w.wtns", "p.json", "q.json", "--workers=x"],
                                  ["prove", "a.zkey", "w.wtns", "p.json", "q.json", "--r1cs"],
                                  ["prove", "a.zkey", "w.wtns", "p.json", "q.json", "--no-serve"],
                                  ["prove", "a.zkey", "w.wtns", "p.json", "q.json", "--profile"],
                                  ["prove", "a.zkey", "w.wtns", "p.json", "q.json", "--no-check=1"],
                                  ["prove", "a.zkey", "", "p.json", "q.json"]])
def test_other_command_lines_go_to_the_python_command(service, client, tmp_path, args):
    """Handed over unchanged, and answered as the Python command answers them."""
    log = tmp_path / "handover.log"
    res = run(client, args, service.env, log, cwd=tmp_path)
    assert handed_over(log) == [" ".join(args)]
    py = subprocess.run([sys.executable, "-m", "zktensor.cli", *args], env=service.env, cwd=tmp_path,
                        capture_output=True, text=True, timeout=300)
    assert (res.returncode, res.stdout, res.stderr) == (py.returncode, py.stdout, py.stderr)


def test_a_path_that_is_not_utf8_goes_to_the_python_command(client, tmp_path):
    log = tmp_path / "handover.log"
    res = subprocess.run([bytes(client), b"prove", b"a.zkey", b"w\xff.wtns", b"p.json", b"q.json"],
                         env=dict(cli_env(tmp_path / "run"), HANDOVER_LOG=str(log), FAKE_FALLBACK="1"),
                         cwd=tmp_path, capture_output=True, timeout=60)
    assert res.returncode == 42 and log.read_bytes() == b"prove a.zkey w\xff.wtns p.json q.json\n"


def test_no_service_proves_in_process(client, tmp_path):
    log = tmp_path / "handover.log"
    res = run(client, demo_args(tmp_path), cli_env(tmp_path / "run"), log)
    assert res.returncode == 0, res.stderr
    assert len(handed_over(log)) == 1 and valid(tmp_path)


def test_a_tcp_service_is_the_python_clients(client, tmp_path):
    log = tmp_path / "handover.log"
    env = dict(cli_env(tmp_path / "run"), ZKTENSOR_SERVE_ADDR="127.0.0.1:1", FAKE_FALLBACK="1")
    assert run(client, demo_args(tmp_path), env, log).returncode == 42 and len(handed_over(log)) == 1


def test_service_killed_mid_request(client, tmp_path):
    """The service dies with the request in it: no file from it; the client says so and the
    Python command proves in-process (--no-serve in place of --serve)."""
    run_dir = tmp_path / "run"
    svc = Service(run_dir, env_extra={"ZKTENSOR_SERVE_TEST_HOOKS": "1"})
    out = tmp_path / "out"
    out.mkdir()
    log = tmp_path / "handover.log"
    env = cli_env(run_dir, ZKTENSOR_SERVE_TEST_STALL=60, HANDOVER_LOG=log)
    proc = subprocess.Popen([str(client), *map(str, demo_args(out)), "--serve"], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while svc.status()["in_flight"] < 1:
            assert time.monotonic() < end and proc.poll() is None
            time.sleep(0.05)
        os.kill(svc.proc.pid, signal.SIGKILL)
        svc.proc.wait()
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
        svc.stop()
    assert proc.returncode == 0, err
    assert "went away mid-request; proving in-process" in err
    assert handed_over(log) == [" ".join(map(str, demo_args(out))) + " --no-serve"]
    assert valid(out) and sorted(p.name for p in out.iterdir()) == ["proof.json", "public.json"]


def test_a_client_that_went_away_gets_no_files(service, client, tmp_path):
    """Killed while the service proves (Ctrl-C), the command leaves no file behind it later."""
    log = tmp_path / "handover.log"
    env = dict(service.env, ZKTENSOR_SERVE_TEST_STALL="2", HANDOVER_LOG=str(log))
    proc = subprocess.Popen([str(client), *map(str, demo_args(tmp_path))], env=env, cwd=REPO,
                            stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 60
    while service.status()["in_flight"] < 1:
        assert time.monotonic() < end and proc.poll() is None
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert (proc.returncode, err) == (130, "zktensor: error: interrupted\n")      # as the Python command
    while service.status()["in_flight"] > 0:
        assert time.monotonic() < end + 60
        time.sleep(0.05)
    assert list(tmp_path.glob("*.json")) == [] and handed_over(log) == []
    assert service.proc.poll() is None


def test_prove_files_only_on_the_unix_socket(tmp_path):
    run_dir = tmp_path / "run"
    svc = Service(run_dir, "--tcp", "0")
    try:
        info = json.loads((run_dir / "serve.json").read_text())
        token = (run_dir / "serve.token").read_text().strip()
        s = socket.create_connection(("127.0.0.1", info["tcp_port"]), timeout=30)
        protocol.send(s, {"op": "prove_files", "token": token, "cwd": str(tmp_path), "zkey": str(DEMO / "demo.zkey"),
                          "witness": str(DEMO / "demo.wtns"), "proof": "p.json", "public": "q.json"})
        reply = protocol.recv(s)
        s.close()
    finally:
        svc.stop()
    assert reply["ok"] is False and reply["status"] == 2 and "Unix socket" in reply["error"]
    assert not (tmp_path / "p.json").exists()


# -- the reply parser, against a fake service --------------------------------------------------

class FakeService:
    """Listens on serve.sock in ``run_dir``; answers each connection with ``reply`` (bytes after
    the length, or None to close without a reply) and keeps the requests it read."""

    def __init__(self, run_dir: Path, reply: bytes | None):
        run_dir.mkdir(mode=0o700)
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(str(run_dir / "serve.sock"))
        self.sock.listen(4)
        self.requests: list[dict] = []
        self.reply = reply
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        conn, _ = self.sock.accept()
        with conn:
            self.requests.append(protocol.recv(conn))
            if self.reply is not None:
                conn.sendall(len(self.reply).to_bytes(4, "big") + self.reply)

    def close(self):
        self.sock.close()


REPLIES = {
    "ok": (b'{"ok": true, "resident": true, "load_s": 1.5e-4, "x": {"a": [1, -2.5E+3, null, false, "\\""]}}', 0, ""),
    "error": (b'{"status": 7, "ok": false, "error": "caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\/ tab\\tend"}', 7,
              'zktensor: error: café \U0001F600 "q" \\ / tab\tend\n'),
    "lone surrogate": (b'{"ok": false, "error": "a\\ud800b", "status": 1}', 1, "zktensor: error: a\ufffdb\n"),
    "status out of range": (b'{"ok": false, "error": "x", "status": 300}', 1, "zktensor: error: x\n"),
    "no error text": (b'{"ok": false}', 1, "zktensor: error: the service refused the request\n"),
}


@pytest.mark.parametrize("name", list(REPLIES))
def test_replies_are_read_as_json(client, tmp_path, name):
    reply, status, err = REPLIES[name]
    fake = FakeService(tmp_path / "run", reply)
    log = tmp_path / "handover.log"
    env = dict(cli_env(tmp_path / "run"), FAKE_FALLBACK="1")
    try:
        res = run(client, ["prove", "k.zkey", "sub/w.wtns", "/abs/p.json", "q.json", "--r1cs", "c.r1cs",
                           "--no-verify", "--workers", "3"], env, log, cwd=tmp_path)
    finally:
        fake.close()
    assert (res.returncode, res.stderr, handed_over(log)) == (status, err, [])
    req = fake.requests[0]
    assert protocol.request_error(req) is None, req
    assert req == {"op": "prove_files", "cwd": str(tmp_path), "zkey": "k.zkey", "witness": "sub/w.wtns",
                   "proof": "/abs/p.json", "public": "q.json", "r1cs": "c.r1cs", "check": True, "verify": False,
                   "workers": 3}


@pytest.mark.parametrize("reply", [b"not json", b'{"ok": true', b'{"ok": true} x', b'[1]', b'{"ok": tru}',
                                   b'{"e": "\\x"}', b'{"a": ' * 12 + b"1" + b"}" * 12, b""])
def test_a_reply_it_cannot_read_goes_to_the_python_command(client, tmp_path, reply):
    fake = FakeService(tmp_path / "run", reply)
    log = tmp_path / "handover.log"
    args = ["prove", "k.zkey", "w.wtns", "p.json", "q.json"]
    try:
        res = run(client, args, dict(cli_env(tmp_path / "run"), FAKE_FALLBACK="1"), log, cwd=tmp_path)
    finally:
        fake.close()
    assert res.returncode == 42 and handed_over(log) == [" ".join(args)]
    assert "not one this client reads" in res.stderr


def test_an_older_service_and_a_lost_reply(client, tmp_path):
    """A service without prove_files ("bad request") gets the Python client's request; one that
    closes without a reply, the in-process proof."""
    args = ["prove", "k.zkey", "w.wtns", "p.json", "q.json", "--serve"]
    for reply, expected, note in [
            (b'{"ok": false, "error": "bad request: unknown op \'prove_files\'", "status": 2}', " ".join(args), ""),
            (None, " ".join(args[:-1] + ["--no-serve"]), "went away mid-request")]:
        run_dir = tmp_path / f"run{len(note)}"
        log = tmp_path / f"handover{len(note)}.log"
        fake = FakeService(run_dir, reply)
        try:
            res = run(client, args, dict(cli_env(run_dir), FAKE_FALLBACK="1"), log, cwd=tmp_path)
        finally:
            fake.close()
        assert res.returncode == 42 and handed_over(log) == [expected] and note in res.stderr


def test_install_keeps_the_python_command_and_remove_restores_it(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "zktensor"
    script.write_text(f"#!{sys.executable}\nimport sys\nfrom zktensor.cli import entry\nsys.exit(entry())\n")
    script.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    code = f"import sys; from zktensor.serve import native; print(native.{{}}({str(bin_dir)!r}))"
    for _ in range(2):              # again: rebuilt over the native one, the Python command kept
        res = subprocess.run([sys.executable, "-c", code.format("install")], env=env, capture_output=True,
                             text=True, timeout=300)
        assert res.returncode == 0, res.stderr
        assert native.is_native(str(script)) and (bin_dir / "zktensor-py").read_text().startswith("#!")
    res = subprocess.run([str(script), "--help"], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "usage: zktensor" in res.stdout
    res = subprocess.run([sys.executable, "-c", code.format("remove")], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0 and script.read_text().startswith("#!") and not (bin_dir / "zktensor-py").exists()


@pytest.mark.parametrize("where", ["runtime dir", "cache dir", "xdg cache", "home"])
def test_finds_the_socket_where_the_python_client_does(client, tmp_path, where):
    """serve/paths.py is the oracle: the fake service listens where it says, for each way the
    run directory is found."""
    env = {k: v for k, v in cli_env(tmp_path / "unused").items()
           if k not in ("ZKTENSOR_SERVE_DIR", "XDG_RUNTIME_DIR", "ZKTENSOR_CACHE_DIR", "XDG_CACHE_HOME")}
    (tmp_path / "rt").mkdir()
    env.update({"runtime dir": {"XDG_RUNTIME_DIR": str(tmp_path / "rt")},
                "cache dir": {"ZKTENSOR_CACHE_DIR": str(tmp_path / "c")},
                "xdg cache": {"XDG_CACHE_HOME": str(tmp_path / "x")},
                "home": {"HOME": str(tmp_path / "h")}}[where])
    where_py = subprocess.run([sys.executable, "-c", "from zktensor.serve import paths; print(paths.run_dir())"],
                              env=env, capture_output=True, text=True, timeout=60, check=True).stdout.strip()
    run_dir = Path(where_py)
    assert run_dir.is_relative_to(tmp_path)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    fake = FakeService(run_dir, b'{"ok": true}')
    log = tmp_path / "handover.log"
    try:
        res = run(client, ["prove", "k.zkey", "w.wtns", "p.json", "q.json"], env, log, cwd=tmp_path)
    finally:
        fake.close()
    assert (res.returncode, res.stderr, handed_over(log)) == (0, "", []) and len(fake.requests) == 1
