"""The service's life as a user drives it: started by `prove --serve` or `serve --detach`,
stopped by `serve --stop` (the process gone, the socket removed), its `--memory` budget
(bad values refused in one line; two real keys under a budget that holds one), and a
service killed while it proves (no partial file; the client proves in-process)."""
from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from serve_support import DEMO, REPO, Service, cli_env, zktensor


def demo_args(out: Path, tag: str = "", zkey=None):
    return ["prove", zkey or DEMO / "demo.zkey", DEMO / "demo.wtns", out / f"proof{tag}.json",
            out / f"public{tag}.json", "--r1cs", DEMO / "demo.r1cs"]


def valid(out: Path, tag: str = "") -> bool:
    from zktensor.groth16.verifier import verify
    return verify(DEMO / "verification_key.json", out / f"public{tag}.json", out / f"proof{tag}.json")


def alive(pid: int) -> bool:
    from zktensor.serve.command import _alive
    return _alive(pid)


def _kill_leftover(run: Path) -> None:
    """A detached service this test started and did not stop (a failed assertion): gone."""
    try:
        pid = json.loads((run / "serve.json").read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


def test_prove_serve_starts_the_service_and_stop_ends_it(tmp_path):
    run = tmp_path / "run"
    env = cli_env(run)
    try:
        res = zktensor(demo_args(tmp_path) + ["--serve", "--profile"], env, timeout=300)
        assert res.returncode == 0, res.stderr
        assert "service: loaded now" in res.stdout and valid(tmp_path)     # the service it started proved it
        pid = json.loads((run / "serve.json").read_text())["pid"]
        assert alive(pid) and (run / "serve.sock").exists()
        res = zktensor(demo_args(tmp_path, "2") + ["--profile"], env, timeout=300)
        assert res.returncode == 0 and "service: resident" in res.stdout, res.stderr
        res = zktensor(["serve", "--detach"], env, timeout=60)
        assert res.returncode == 1 and "already running" in res.stderr
        res = zktensor(["serve", "--stop"], env, timeout=60)
        assert res.returncode == 0 and f"stopped pid {pid}" in res.stdout, res.stderr
        # --stop returns once the process has exited and its files are gone
        assert not alive(pid)
        assert not (run / "serve.sock").exists() and not (run / "serve.json").exists()
        res = zktensor(["serve", "--stop"], env, timeout=60)
        assert res.returncode == 1 and "no service running" in res.stderr
        # --detach starts one in the background and returns once it answers
        res = zktensor(["serve", "--detach", "--memory", "1G"], env, timeout=120)
        assert res.returncode == 0 and "listening on" in res.stdout, res.stderr
        pid2 = json.loads((run / "serve.json").read_text())["pid"]
        assert pid2 != pid and alive(pid2)
        st = zktensor(["serve", "--status"], env, timeout=60)
        assert st.returncode == 0 and f"pid {pid2}" in st.stdout and "of 1024.0 MiB budget" in st.stdout
        res = zktensor(["serve", "--stop"], env, timeout=60)
        assert res.returncode == 0 and not alive(pid2) and not (run / "serve.sock").exists()
    finally:
        _kill_leftover(run)


@pytest.mark.parametrize("value", ["abc", "", "0", "-1G", "inf", "nan", "1e9", "8X", "0.1", "99999999T"])
def test_bad_memory_values_are_refused_in_one_line(tmp_path, value):
    run = tmp_path / "run"
    res = zktensor(["serve", f"--memory={value}"], cli_env(run), timeout=60)     # "=": argparse takes "-1G"
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"zktensor: error: --memory {value!r}: ")
    assert not run.exists()                 # nothing started


def test_memory_sizes():
    from zktensor.serve.command import parse_size
    assert [parse_size(s) for s in ("8G", "512M", "1.5g", "6GiB", "6gb", "1073741824", " 100k ")] == \
        [8 << 30, 512 << 20, 3 << 29, 6 << 30, 6 << 30, 1 << 30, 100 << 10]


def _sections_reversed(data: bytes) -> bytes:
    """The same key with its sections in reverse order: legal (readers find sections by id),
    another file content, so the service holds it as another key."""
    magic, version, n = struct.unpack_from("<4sII", data, 0)
    pos, secs = 12, []
    for _ in range(n):
        sid, size = struct.unpack_from("<IQ", data, pos)
        secs.append(data[pos:pos + 12 + size])
        pos += 12 + size
    return data[:12] + b"".join(secs[::-1])


def test_a_budget_for_one_key_holds_one(tmp_path):
    from zktensor.serve.footprint import resident_bytes
    other = tmp_path / "other.zkey"
    other.write_bytes(_sections_reversed((DEMO / "demo.zkey").read_bytes()))
    one = resident_bytes(DEMO / "demo.zkey", "cpu")
    assert resident_bytes(other, "cpu") == one
    run = tmp_path / "run"
    svc = Service(run, "--memory", str(one * 3 // 2), "--device", "cpu")
    try:
        env = cli_env(run)
        for i, (zkey, resident, evicted) in enumerate([(DEMO / "demo.zkey", False, 0), (other, False, 1),
                                                       (DEMO / "demo.zkey", False, 2), (DEMO / "demo.zkey", True, 2)]):
            res = zktensor(demo_args(tmp_path, str(i), zkey=zkey) + ["--profile"], env, timeout=300)
            assert res.returncode == 0, res.stderr
            assert f"service: {'resident' if resident else 'loaded now'}" in res.stdout, (i, res.stdout)
            assert valid(tmp_path, str(i))
            st = svc.status()
            assert [Path(k["path"]).name for k in st["keys"]] == [Path(zkey).name], (i, st["keys"])
            assert st["keys"][0]["bytes"] == one and st["evicted"] == evicted, (i, st)
            assert st["resident_bytes"] <= st["budget_bytes"]
    finally:
        svc.stop()


def test_service_killed_mid_proof(tmp_path):
    """Killed while it proves (a graph node stalled by a test hook, the others running), the
    service leaves no file: the client proves in-process and writes the pair itself."""
    run = tmp_path / "run"
    svc = Service(run, env_extra={"ZKTENSOR_SERVE_TEST_HOOKS": "1"})
    out = tmp_path / "out"
    out.mkdir()
    client = subprocess.Popen([sys.executable, "-m", "zktensor.cli", *map(str, demo_args(out))],
                              env=cli_env(run, ZKTENSOR_SERVE_TEST_STALL=120, ZKTENSOR_SERVE_TEST_STALL_NODE="msm_h"),
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 240
        while not (run / "test-stalled").exists():      # the proof's graph runs: msm_h has started
            assert time.monotonic() < end and client.poll() is None, svc.log_text()
            time.sleep(0.05)
        st = svc.status()
        assert st["in_flight"] == 1 and st["keys"][0]["busy"] == 1
        assert os.listdir(out) == []                    # nothing written while it proves
        os.kill(svc.proc.pid, signal.SIGKILL)
        svc.proc.wait()
        _, err = client.communicate(timeout=300)
    finally:
        if client.poll() is None:
            client.kill()
        svc.stop()
    assert client.returncode == 0, err
    assert "went away mid-request" in err and "proving in-process" in err
    assert valid(out)
    assert sorted(os.listdir(out)) == ["proof.json", "public.json"]       # no temporary left
