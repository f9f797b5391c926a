"""zktensor serve and the thin client, end to end, as processes.

Proofs made through the service are checked by zktensor's pairing verifier (the demo
key) and by snarkjs (the fixtures, marked ``snarkjs``).
"""
from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from serve_support import DEMO, REPO, Service, cli_env, zktensor

sys.path.insert(0, str(REPO / "tests" / "groth16"))


def demo_args(out: Path, tag: str = "", wtns=None, zkey=None):
    return ["prove", zkey or DEMO / "demo.zkey", wtns or DEMO / "demo.wtns", out / f"proof{tag}.json",
            out / f"public{tag}.json", "--r1cs", DEMO / "demo.r1cs"]


def valid(out: Path, tag: str = "") -> bool:
    from zktensor.groth16.verifier import verify
    return verify(DEMO / "verification_key.json", out / f"public{tag}.json", out / f"proof{tag}.json")


def test_socket_is_private(service):
    sock = service.run_dir / "serve.sock"
    assert stat.S_ISSOCK(os.stat(sock).st_mode)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(service.run_dir).st_mode) == 0o700


def test_prove_through_service(service, tmp_path):
    res = zktensor(demo_args(tmp_path) + ["--profile"], service.env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "service:" in res.stdout           # the profile line says the service proved it
    assert valid(tmp_path)
    st = service.status()
    keys = {Path(k["path"]).name: k for k in st["keys"]}
    assert keys["demo.zkey"]["proofs"] >= 1 and keys["demo.zkey"]["bytes"] > 0
    res = zktensor(["serve", "--status"], service.env, timeout=60)
    assert res.returncode == 0 and "demo.zkey" in res.stdout and "MiB" in res.stdout


# what a proof through the service must not import: torch and numpy; ctypes (the malloc
# setting waits for numpy's or torch's import, `runtime.host_memory`); argparse (a plain
# command line is read from the argument table, `cli.quick_args`); and the standard
# library's modules that the client's start-up used to pay for (`serve.wire`, `config`)
HEAVY = ("torch", "numpy", "ctypes", "argparse", "json", "re", "socket", "threading", "enum",
         "contextlib", "collections", "functools", "signal", "typing", "dataclasses", "pathlib",
         "importlib", "warnings", "types", "math")


def test_client_imports_neither_torch_nor_numpy(service, tmp_path):
    code = ("import sys; from zktensor.cli import main; rc = main(sys.argv[1:]); "
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}); "
            "print('HEAVY', bad); sys.exit(rc)")
    res = subprocess.run([sys.executable, "-c", code, *map(str, demo_args(tmp_path))], env=service.env,
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "HEAVY []" in res.stdout
    assert valid(tmp_path)
    res = subprocess.run([sys.executable, "-c", code, "serve", "--status"], env=service.env,    # a client too
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and "resident" in res.stdout and "HEAVY []" in res.stdout, res


def test_several_clients_and_bad_requests_beside_good_ones(service, tmp_path):
    bad_zkey = tmp_path / "corrupt.zkey"
    data = bytearray((DEMO / "demo.zkey").read_bytes())
    bad_zkey.write_bytes(bytes(data[:len(data) // 2]))              # truncated
    wrong_wtns = tmp_path / "wrong.wtns"
    w = bytearray((DEMO / "demo.wtns").read_bytes())
    w[-5] ^= 0x01                                                   # the last wire's value changed
    wrong_wtns.write_bytes(bytes(w))
    jobs = {"good0": demo_args(tmp_path, "0"), "good1": demo_args(tmp_path, "1"),
            "good2": demo_args(tmp_path, "2"),
            "corrupt": demo_args(tmp_path, "c", zkey=bad_zkey),
            "witness": demo_args(tmp_path, "w", wtns=wrong_wtns)}
    results = {}

    def go(name):
        results[name] = zktensor(jobs[name], service.env, timeout=300)
    threads = [threading.Thread(target=go, args=(n,)) for n in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for tag in "012":
        assert results[f"good{tag}"].returncode == 0, results[f"good{tag}"].stderr
        assert valid(tmp_path, tag)
    assert results["corrupt"].returncode == 1
    assert "corrupt.zkey" in results["corrupt"].stderr and "Traceback" not in results["corrupt"].stderr
    assert results["witness"].returncode == 1
    assert "constraint" in results["witness"].stderr and "Traceback" not in results["witness"].stderr
    for tag in "cw":
        assert not (tmp_path / f"proof{tag}.json").exists() and not (tmp_path / f"public{tag}.json").exists()
    assert service.proc.poll() is None and service.status()["ok"]


@pytest.mark.snarkjs
def test_snarkjs_accepts_service_proofs(service, tmp_path):
    from fixture_support import BUILD, Snarkjs, build_fixtures
    fx = build_fixtures()
    sj = Snarkjs(BUILD)
    for name in ("multi_public",):
        f = fx[name]
        res = zktensor(["prove", f.zkey, f.wtns, tmp_path / f"{name}.proof.json", tmp_path / f"{name}.public.json",
                        "--r1cs", f.r1cs], service.env, timeout=300)
        assert res.returncode == 0, res.stderr
        assert sj.verify_cli(f.vk, tmp_path / f"{name}.public.json", tmp_path / f"{name}.proof.json")
    assert "multi_public" in {Path(k["path"]).parent.name for k in service.status()["keys"]}


def test_no_service_proves_in_process_and_stale_socket(tmp_path):
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(run / "serve.sock"))                 # a socket file nobody listens on
    s.close()
    env = cli_env(run)
    res = zktensor(demo_args(tmp_path), env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert valid(tmp_path)
    svc = Service(run)                              # the service replaces the stale file
    try:
        assert "stale socket" in svc.log_text()
        assert zktensor(["serve", "--status"], env, timeout=60).returncode == 0
    finally:
        svc.stop()
    assert not (run / "serve.sock").exists()
    assert zktensor(["serve", "--status"], env, timeout=60).returncode == 1


def test_service_killed_mid_request(tmp_path):
    run = tmp_path / "run"
    svc = Service(run, env_extra={"ZKTENSOR_SERVE_TEST_HOOKS": "1"})
    out = tmp_path / "out"
    out.mkdir()
    client = subprocess.Popen([sys.executable, "-m", "zktensor.cli", *map(str, demo_args(out))],
                              env=cli_env(run, ZKTENSOR_SERVE_TEST_STALL=60), cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while svc.status()["in_flight"] < 1:        # the request is in the service
            assert time.monotonic() < end and client.poll() is None
            time.sleep(0.05)
        os.kill(svc.proc.pid, signal.SIGKILL)
        svc.proc.wait()
        _, err = client.communicate(timeout=300)
    finally:
        if client.poll() is None:
            client.kill()
        svc.stop()
    assert client.returncode == 0, err
    assert "went away mid-request" in err
    assert valid(out)
    assert sorted(p.name for p in out.iterdir()) == ["proof.json", "public.json"]   # no temporary left


def test_no_serve_and_tcp_token(tmp_path):
    run = tmp_path / "run"
    svc = Service(run, "--tcp", "0")
    try:
        env = cli_env(run)
        bad = tmp_path / "short.zkey"                           # fails fast in-process, after the imports
        bad.write_bytes((DEMO / "demo.zkey").read_bytes()[:100])
        res = zktensor(demo_args(tmp_path, zkey=bad) + ["--no-serve"], env, timeout=300)
        assert res.returncode == 1 and "short.zkey" in res.stderr
        assert svc.status()["requests"] == 1                     # only this status request: proved in-process
        port = svc.status()["tcp_port"]
        token = (run / "serve.token").read_text().strip()
        assert stat.S_IMODE(os.stat(run / "serve.token").st_mode) == 0o600
        res = zktensor(demo_args(tmp_path, "t"), dict(env, ZKTENSOR_SERVE_ADDR=f"127.0.0.1:{port}",
                                                         ZKTENSOR_SERVE_TOKEN="0" * 64), timeout=300)
        assert res.returncode == 2 and "token" in res.stderr
        res = zktensor(["serve", "--status"], dict(env, ZKTENSOR_SERVE_ADDR=f"127.0.0.1:{port}",
                                                   ZKTENSOR_SERVE_TOKEN="0" * 64), timeout=60)
        assert res.returncode == 1 and res.stderr == "zktensor serve: the service refused: a wrong or missing token\n"
        res = zktensor(demo_args(tmp_path, "t"), dict(env, ZKTENSOR_SERVE_ADDR=f"127.0.0.1:{port}",
                                                         ZKTENSOR_SERVE_TOKEN=token), timeout=300)
        assert res.returncode == 0, res.stderr
        assert valid(tmp_path, "t")
    finally:
        svc.stop()


# -- hostile and malformed requests: one line back, the service goes on -------------------------


def _raw(service, body: bytes, length: int | None = None) -> dict:
    """Send ``body`` after a length header (``length``: another length than the body's) and
    read the reply, at the protocol level (what a broken or hostile client sends)."""
    from zktensor.serve import protocol
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(str(service.run_dir / "serve.sock"))
    try:
        s.sendall(len(body).to_bytes(4, "big") if length is None else length.to_bytes(4, "big"))
        if length is None:
            s.sendall(body)
        return protocol.recv(s)
    finally:
        s.close()


def _json(obj) -> bytes:
    import json
    return json.dumps(obj).encode()


PROVE = {"op": "prove", "zkey": str(DEMO / "demo.zkey"), "witness": str(DEMO / "demo.wtns")}
PROVE_FILES = {"op": "prove_files", "cwd": "/tmp", "zkey": "k.zkey", "witness": "w.wtns", "proof": "p.json",
               "public": "q.json"}
HOSTILE = {
    "deep nesting": b"[" * 100000 + b"]" * 100000,
    "deep unclosed": b'{"a":' * 50000,
    "deep in runs of 8": b"[[[[[[[[]" * 10000,
    "a 5000-digit number": b'{"op": "ping", "n": ' + b"9" * 5000 + b"}",
    "a huge exponent": b'{"op": "ping", "n": 1e99999}',
    "NaN": b'{"op": "ping", "n": NaN}',
    "not JSON": b"{",
    "not UTF-8": b'{"op": "\xff"}',
    "a list": b"[]",
    "r1cs a number": _json(dict(PROVE, r1cs=5)),
    "r1cs an object": _json(dict(PROVE, r1cs={"a": [1]})),
    "zkey relative": _json(dict(PROVE, zkey="demo.zkey")),
    "zkey with a NUL": _json(dict(PROVE, zkey="/tmp/a\0b")),
    "zkey a lone surrogate": b'{"op": "prove", "zkey": "/\\ud800", "witness": "/w"}',
    "zkey 5000 characters": _json(dict(PROVE, zkey="/" + "a" * 5000)),
    "no witness": _json({"op": "prove", "zkey": PROVE["zkey"]}),
    "check a string": _json(dict(PROVE, check="yes")),
    "workers a string": _json(dict(PROVE, workers="3")),
    "workers 0": _json(dict(PROVE, workers=0)),
    "workers true": _json(dict(PROVE, workers=True)),
    "unknown field": _json(dict(PROVE, zkey_path="/x")),
    # the native client's request: paths as typed, relative to an absolute "cwd"
    "files: cwd relative": _json(dict(PROVE_FILES, cwd="tmp")),
    "files: no cwd": _json({k: v for k, v in PROVE_FILES.items() if k != "cwd"}),
    "files: proof empty": _json(dict(PROVE_FILES, proof="")),
    "files: public a list": _json(dict(PROVE_FILES, public=["q.json"])),
    "files: witness with a NUL": _json(dict(PROVE_FILES, witness="w\0.wtns")),
    "files: no public": _json({k: v for k, v in PROVE_FILES.items() if k != "public"}),
    "files: profile": _json(dict(PROVE_FILES, profile=True)),
    "unknown op": _json({"op": "format"}),
    "op a number": _json({"op": 7}),
    "no op": _json({}),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_requests_get_one_line(service, name):
    reply = _raw(service, HOSTILE[name])
    assert reply["ok"] is False and reply["status"] == 2, reply
    assert reply["error"].startswith("bad request: ") and "\n" not in reply["error"], reply
    assert len(reply["error"]) < 300, reply
    assert service.proc.poll() is None and service.status()["ok"]
    assert "Traceback" not in service.log_text()


def test_an_oversized_request_is_refused_unread(service):
    reply = _raw(service, b"", length=(1 << 20) + 1)
    assert reply == {"ok": False, "error": f"bad request: a message of {(1 << 20) + 1} bytes (at most {1 << 20})",
                     "status": 2}
    assert "Traceback" not in service.log_text()


def test_errors_name_the_paths_as_typed(service, tmp_path):
    """The service is sent absolute paths and names resolved ones; the user reads the paths
    as typed (relative, through a symbolic link)."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    (real / "corrupt.zkey").write_bytes((DEMO / "demo.zkey").read_bytes()[:1000])
    (real / "w.wtns").write_bytes((DEMO / "demo.wtns").read_bytes())
    res = subprocess.run([sys.executable, "-m", "zktensor.cli", "prove", "link/corrupt.zkey", "link/w.wtns",
                          "p.json", "q.json"], env=service.env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("zktensor: error: link/corrupt.zkey: "), res.stderr
    assert str(tmp_path) not in res.stderr
    assert service.status()["requests"] >= 1 and not (tmp_path / "p.json").exists()


def test_as_typed_maps_the_longest_path_first():
    from zktensor.serve.client import as_typed
    names = {"/w/a": "a", "/w/a.r1cs": "x/a.r1cs"}
    assert as_typed("/w/a.r1cs does not fit /w/a", names) == "x/a.r1cs does not fit a"
    assert as_typed("nothing to map", {}) == "nothing to map"


# -- --trace and --workers go through the service; --device and --no-helper prove here -------------


def test_trace_and_workers_through_the_service(service, tmp_path):
    import json
    trace = tmp_path / "trace.json"
    res = zktensor(demo_args(tmp_path) + ["--trace", trace, "--workers", "1"], service.env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "service:" in res.stdout and f"trace written to {trace}" in res.stdout
    doc = json.loads(trace.read_text())
    assert doc["otherData"]["workers"] == 1 and any(e.get("name") == "msm_h" for e in doc["traceEvents"])
    assert valid(tmp_path)


def test_device_and_no_helper_prove_here_and_say_so(service, tmp_path):
    before = service.status()["requests"]
    res = zktensor(demo_args(tmp_path) + ["--no-helper", "--profile"], service.env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "note: --no-helper: proving in this process, not through the running prover service" in res.stderr
    assert "service:" not in res.stdout and valid(tmp_path)
    assert service.status()["requests"] == before + 2      # the ping that found it, and this status
    res = zktensor(demo_args(tmp_path, "s") + ["--serve", "--device", "cpu"], service.env, timeout=60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--serve with --device" in res.stderr
    assert not (tmp_path / "proofs.json").exists()
    res = zktensor(demo_args(tmp_path, "s") + ["--workers", "0"], service.env, timeout=60)
    assert res.returncode == 2 and "--workers 0" in res.stderr


# -- SO_PEERCRED: a peer of another uid is refused behind the file permissions -------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="connecting as another uid needs root (setuid)")
def test_another_uid_is_refused(service):
    code = ("import json, os, socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "os.setgid(65534); os.setuid(65534)\n"
            "s.connect(sys.argv[1])\n"
            "b = json.dumps({'op': 'status'}).encode()\n"
            "s.sendall(len(b).to_bytes(4, 'big') + b)\n"
            "n = int.from_bytes(s.recv(4), 'big'); data = b''\n"
            "while len(data) < n: data += s.recv(n - len(data))\n"
            "print(data.decode())\n")
    import tempfile
    sock = service.run_dir / "serve.sock"
    # let uid 65534 reach the socket, so that only SO_PEERCRED stands: a second name (a hard link)
    # in a directory it may enter (the run directory's parents are private), and mode 0666
    d = Path(tempfile.mkdtemp())
    d.chmod(0o755)
    os.link(sock, d / "serve.sock")
    sock.chmod(0o666)
    try:
        res = subprocess.run([sys.executable, "-c", code, str(d / "serve.sock")], capture_output=True, text=True,
                             timeout=60)
    finally:
        sock.chmod(0o600)
        (d / "serve.sock").unlink()
        d.rmdir()
    assert res.returncode == 0, res.stderr
    import json
    assert json.loads(res.stdout) == {"ok": False, "error": "uid 65534 may not use this service", "status": 2}
