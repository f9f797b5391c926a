"""What the prover service tests share: a private run directory, `zktensor` as a process and a
running service (a module of its own, not conftest.py, so that test modules can import it by
a name no other test directory uses).

The service runs as a process of its own (`zktensor serve`), as a user would start it,
with the bundled demo key (examples/demo: no node needed) and, for the tests marked
``snarkjs``, the circom/snarkjs fixtures (scripts/fixtures.sh).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"


def cli_env(run_dir: Path, **extra) -> dict:
    env = dict(os.environ, ZKTENSOR_SERVE_DIR=str(run_dir), PYTHONPATH=str(REPO))
    env.pop("ZKTENSOR_SERVE_ADDR", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


def zktensor(args, env, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zktensor.cli", *map(str, args)], env=env, cwd=REPO,
                          capture_output=True, text=True, **kw)


class Service:
    """A `zktensor serve` process in `run_dir`."""

    def __init__(self, run_dir: Path, *args, env_extra: dict | None = None):
        self.run_dir = run_dir
        self.env = cli_env(run_dir, **(env_extra or {}))
        self.log = open(run_dir.parent / f"{run_dir.name}.log", "w")
        self.proc = subprocess.Popen([sys.executable, "-m", "zktensor.cli", "serve", *args], env=self.env,
                                     cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT)
        end = time.monotonic() + 60
        while not (run_dir / "serve.json").exists():
            if self.proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"the service did not start: {self.log_text()}")
            time.sleep(0.05)

    def log_text(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def status(self) -> dict:
        sys.path.insert(0, str(REPO))
        from zktensor.serve import protocol
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.connect(str(self.run_dir / "serve.sock"))
        protocol.send(s, {"op": "status"})
        reply = protocol.recv(s)
        s.close()
        return reply

    def stop(self) -> None:
        if self.proc.poll() is None:
            zktensor(["serve", "--stop"], self.env, timeout=30)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


