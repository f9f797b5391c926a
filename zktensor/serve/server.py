"""The prover service: a threaded socket server over a `Residency` of keys.

One thread per connection; a connection is one request and one reply. A proof runs on
one of the service's own threads (`ProveThreads`), kept from proof to proof. Everything a
request can do wrong (a message that is not JSON or nests too deep, a field of the
wrong type or size: `protocol.request_error`; a missing or corrupt file, a witness that
does not satisfy the circuit, a key that does not fit the witness) becomes that
connection's one-line error reply; the service and the other clients go on. The Unix socket is made 0600 inside a 0700
directory, and a peer of another uid (SO_PEERCRED) is refused as well. TCP, only with
``--tcp PORT``, listens on 127.0.0.1 and wants the token of ``serve.token`` (0600) in
every request.

torch and the compiler are imported by a thread started with the service, so the
socket answers (status, stop) at once and the first proof finds them loaded.
"""
from __future__ import annotations

import contextlib
import hmac
import importlib
import json
import os
import queue
import secrets
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
import traceback
from concurrent.futures import Future

from . import paths, protocol
from .footprint import resident_bytes
from .residency import Residency


def default_budget() -> int:
    """Half of physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class ProveThreads:
    """Threads kept for proofs: each call of `run` gets an idle one, or a new one when none is
    idle, so proofs of several clients run side by side as before. The connection's own
    thread is new for every request, and a proof on a new thread was slower than on one
    that had proved before (the thread-local buffers of the CPU kernels are made again;
    same-process timings in the commit that made this so). Daemon threads, as the
    connections' are: a service that stops does not wait for a proof in flight."""

    def __init__(self):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self.started = 0

    def run(self, fn, *args):
        """fn(*args) on a kept thread; its result, or its exception raised here."""
        with self._lock:
            if self._idle:
                self._idle -= 1         # that thread is this job's: no later job takes it first
            else:
                self.started += 1
                threading.Thread(target=self._loop, name=f"zktensor-prove-{self.started}", daemon=True).start()
        fut: Future = Future()
        self._jobs.put((fut, fn, args))
        return fut.result()

    def _loop(self) -> None:
        while True:
            fut, fn, args = self._jobs.get()
            try:
                value, error = fn(*args), None
            except BaseException as e:  # noqa: BLE001 - raised again by the caller
                value, error = None, e
            del fn, args                # nothing of the request stays alive on an idle thread
            with self._lock:
                self._idle += 1         # before the caller wakes: its next run() finds this thread idle
            if error is None:
                fut.set_result(value)
            else:
                fut.set_exception(error)
            del fut, value, error


class Service:
    def __init__(self, budget_bytes: int | None = None, device: str | None = None, plain: bool = False,
                 tcp_port: int | None = None):
        self.device, self.plain = device, plain
        self.residency = Residency(budget_bytes or default_budget(), self._load,
                                   estimate=lambda path: resident_bytes(path, device, plain))
        self.started = time.monotonic()
        self.requests = 0
        self.tcp_port = tcp_port
        self.token = secrets.token_hex(32) if tcp_port is not None else None
        self.stopping = threading.Event()
        self.in_flight = 0                  # prove requests being served
        self._count = threading.Lock()
        # tests only: a prove request may ask the service to stall (to be killed mid-request,
        # or mid-proof: `_stall_in_node`)
        self._stall_ok = os.environ.get("ZKTENSOR_SERVE_TEST_HOOKS") == "1"
        self._servers: list[socketserver.BaseServer] = []
        self.prove_threads = ProveThreads()

    # -- requests ----------------------------------------------------------------------
    def handle(self, req: dict, alive=None) -> dict:
        """The reply to ``req``; ``alive()`` says whether its client still waits (a
        "prove_files" request's files are not written for a client that has gone)."""
        with self._count:
            self.requests += 1
        bad = protocol.request_error(req)
        if bad:
            return {"ok": False, "error": bad, "status": 2}
        op = req["op"]
        try:
            if op == "ping":
                return {"ok": True, "pid": os.getpid()}
            if op == "status":
                return self.status()
            if op == "stop":        # stopped by the connection's handler, once this reply is sent
                return {"ok": True, "pid": os.getpid()}
            if op in ("prove", "prove_files"):
                with self._count:
                    self.in_flight += 1
                try:
                    if op == "prove":
                        return self.prove_threads.run(self.prove, req)
                    return self.prove_threads.run(self.prove_files, req, alive)
                finally:
                    with self._count:
                        self.in_flight -= 1
            return {"ok": False, "error": f"unknown request {op!r}", "status": 2}
        except Exception as e:  # noqa: BLE001 - one request's failure is its client's error
            return {"ok": False, "error": _one_line(e), "status": _exit_status(e)}

    def prove_files(self, req: dict, alive=None) -> dict:
        """The native client's request (`protocol`): the outputs checked before any work, as
        `zktensor prove` checks them, then the proof, written here as one set (both files or
        neither). Messages name the paths as the user typed them."""
        from ..groth16.outputs import OutputError, check_outputs, write_outputs
        from .client import as_typed, typed_paths
        cwd = req["cwd"]
        typed = [req["zkey"], req["witness"], req.get("r1cs"), req["proof"], req["public"]]
        # the inputs as the Python client sends them; the outputs joined, not normalised, so
        # that check_outputs' messages say what it says in-process ("p.json and link/../p.json")
        zkey, witness, r1cs = (None if p is None else os.path.abspath(os.path.join(cwd, p)) for p in typed[:3])
        proof, public = (os.path.join(cwd, p) for p in typed[3:])
        names = typed_paths(*typed, cwd=cwd)
        for out, shown in ((proof, req["proof"]), (public, req["public"])):
            names.setdefault(out, shown)
            names.setdefault(os.path.dirname(out), os.path.dirname(shown) or ".")   # "directory out does not exist"
        try:
            check_outputs([proof, public], inputs=[zkey, witness, r1cs], what=["proof", "public signals"])
        except OutputError as e:        # usage, as in-process
            return {"ok": False, "error": as_typed(_one_line(e), names), "status": 2}
        try:
            reply = self.prove({**{k: v for k, v in req.items() if k in protocol.PASSED_ON},
                                "zkey": zkey, "witness": witness, "r1cs": r1cs})
            if alive is not None and not alive():       # Ctrl-C'd: no files after the command has exited
                return {"ok": False, "error": "the client went away before its files were written", "status": 1}
            write_outputs([(proof, reply["proof"]), (public, reply["public"])], sync=False)
        except Exception as e:  # noqa: BLE001 - as handle's
            return {"ok": False, "error": as_typed(_one_line(e), names), "status": _exit_status(e)}
        return {"ok": True, "resident": reply["resident"], "load_s": reply["load_s"], "prove_s": reply["prove_s"]}

    def prove(self, req: dict) -> dict:
        """A proof for a request `protocol.request_error` accepted; "trace" asks for the
        graph's Chrome trace (as text, the client writes it), "workers" for scheduler threads."""
        from ..groth16.formats.json_io import dumps, proof_to_json, public_to_json
        if self._stall_ok and req.get("test_stall_s") and not req.get("test_stall_node"):
            time.sleep(req["test_stall_s"])
        trace = bool(req.get("trace"))
        profile = bool(req.get("profile")) or trace
        t0 = time.perf_counter()
        r, resident = self.residency.acquire(req["zkey"])
        try:
            t1 = time.perf_counter()
            with r.lock:
                p = r.prover
                p.r1cs_check = r.r1cs_check(req.get("r1cs"), self.residency.digests)
                t2 = time.perf_counter()
                with self._stall_in_node(p, req):
                    proof, public = p.prove(req["witness"], check=req.get("check", True), verify=req.get("verify"),
                                            profile=profile, workers=req.get("workers"))
                table = p.last_run.table() if profile else None
                trace_text = json.dumps(p.last_run.chrome_trace()) if trace else None
                r.proofs += 1
            t3 = time.perf_counter()
        finally:
            self.residency.release(r)
        return {"ok": True, "proof": dumps(proof_to_json(proof)), "public": dumps(public_to_json(public)),
                "resident": resident, "load_s": t1 - t0 + (t2 - t1 if not resident else 0.0),
                "prove_s": t3 - t2, "table": table, "trace": trace_text}

    @contextlib.contextmanager
    def _stall_in_node(self, prover, req: dict):
        """Tests only (ZKTENSOR_SERVE_TEST_HOOKS=1): the proof's graph node "test_stall_node"
        writes ``test-stalled`` in the run directory, then sleeps "test_stall_s" before its
        work, while the graph's other nodes run: a service that can be killed mid-proof."""
        node = req.get("test_stall_node")
        if not (self._stall_ok and node):
            yield
            return
        make_graph, seconds = prover.graph, req.get("test_stall_s", 60)

        def stalled_graph(*args, **kw):
            g = make_graph(*args, **kw)
            n = g.nodes[node]
            work = n.fn

            def stalled(*inputs):
                with open(os.path.join(paths.run_dir(), "test-stalled"), "w") as f:
                    f.write(node)
                time.sleep(seconds)
                return work(*inputs)
            n.fn = stalled
            return g
        prover.graph = stalled_graph
        try:
            yield
        finally:
            del prover.graph

    def _load(self, path: str):
        from ..groth16.key import PLAIN
        from ..groth16.prover import Prover
        prover = Prover(path, device=self.device, checkpoint=PLAIN if self.plain else None)
        return prover, prover.tables_from

    def status(self) -> dict:
        now = time.monotonic()
        keys = [{"path": r.path, "digest": r.digest, "bytes": r.bytes, "proofs": r.proofs, "load_s": r.load_s,
                 "tables": r.tables, "idle_s": now - r.last_used, "busy": r.busy}
                for r in self.residency.keys()]
        return {"ok": True, "pid": os.getpid(), "uptime_s": now - self.started, "requests": self.requests,
                "in_flight": self.in_flight, "budget_bytes": self.residency.budget, "resident_bytes": sum(k["bytes"] for k in keys),
                "evicted": self.residency.evicted, "rss_bytes": _rss_bytes(), "keys": keys,
                "socket": paths.socket_path(), "tcp_port": self.tcp_port}

    def stop(self) -> None:
        self.stopping.set()
        for s in self._servers:
            s.shutdown()

    # -- sockets -----------------------------------------------------------------------
    def run(self) -> int:
        """Listen until stopped (`--stop`, SIGTERM, SIGINT); 0, or 1 if another service runs."""
        paths.run_dir(create=True)
        sock = paths.socket_path()
        if os.path.lexists(sock):
            if _answers(sock):
                print(f"zktensor serve: a service already listens on {sock}", file=sys.stderr)
                return 1
            print(f"zktensor serve: removing a stale socket file {sock} (no service behind it)", file=sys.stderr)
            os.unlink(sock)
        old = os.umask(0o177)               # the socket is born 0600: no window where others may connect
        try:
            unix = _UnixServer(sock, _Handler)
        finally:
            os.umask(old)
        os.chmod(sock, 0o600)
        unix.service = self
        self._servers.append(unix)
        if self.tcp_port is not None:
            tcp = _TCPServer(("127.0.0.1", self.tcp_port), _Handler)
            tcp.service = self
            self.tcp_port = tcp.server_address[1]
            self._servers.append(tcp)
            _write_private(paths.token_path(), self.token + "\n")
        _write_private(paths.info_path(), json.dumps({"pid": os.getpid(), "socket": sock,
                                                      "tcp_port": self.tcp_port}))
        threading.Thread(target=_preload, daemon=True).start()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: threading.Thread(target=self.stop, daemon=True).start())
        threads = [threading.Thread(target=s.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
                   for s in self._servers]
        for t in threads:
            t.start()
        print(f"zktensor serve: pid {os.getpid()} listening on {sock}"
              + (f" and 127.0.0.1:{self.tcp_port} (token in {paths.token_path()})" if self.tcp_port else "")
              + f"; key memory budget {self.residency.budget / 2**30:.1f} GiB", file=sys.stderr, flush=True)
        try:
            while not self.stopping.wait(0.5):
                pass
            for t in threads:
                t.join()
        finally:
            for s in self._servers:
                s.server_close()
            _remove_ours(sock)
            self.residency.close()
        print("zktensor serve: stopped", file=sys.stderr, flush=True)
        return 0


def _preload() -> None:
    try:
        importlib.import_module("zktensor.groth16.prover")
    except Exception:  # noqa: BLE001 - the first request reports it
        traceback.print_exc()


def _answers(sock) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(sock)
        return True
    except OSError:
        return False
    finally:
        s.close()


def _write_private(path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def _remove_ours(sock) -> None:
    """Remove the socket, info and token files if they are still this process's."""
    try:
        with open(paths.info_path()) as f:
            info = json.load(f)
    except (OSError, ValueError):
        info = {}
    if info.get("pid") == os.getpid():
        for p in (sock, paths.info_path(), paths.token_path()):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def _one_line(e: BaseException) -> str:
    from ..groth16.formats import FormatError
    from ..groth16.r1cs_to_qap import WitnessError
    if isinstance(e, (FormatError, WitnessError, ValueError)):
        msg = str(e)
    elif isinstance(e, OSError):
        msg = f"{e.filename}: {e.strerror}" if e.filename else str(e)
    else:
        traceback.print_exc()
        msg = f"internal error in the prover service: {type(e).__name__}: {e}"
    return " ".join(msg.split()) or type(e).__name__


def _exit_status(e: BaseException) -> int:
    return 1


def _connected(conn) -> bool:
    """Whether the client is still there: no end of stream or reset waiting on its connection."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


class _Handler(socketserver.BaseRequestHandler):
    def handle(self):
        svc: Service = self.server.service
        malformed = None
        try:
            req = protocol.recv(self.request, limit=protocol.MAX_REQUEST)
        except protocol.Malformed as e:        # a whole message that is not one: say why
            req, malformed = {}, f"bad request: {e}"
        except (OSError, protocol.ProtocolError):
            return                              # the client went away mid-message
        denied = self.server.deny(self.request, req)
        if denied or malformed:
            reply = {"ok": False, "error": denied or malformed, "status": 2}
        else:
            reply = svc.handle(req, alive=lambda: _connected(self.request))
        try:
            protocol.send(self.request, reply)
        except OSError:
            pass                                # the client went away: nothing to tell it
        if req.get("op") == "stop" and reply.get("ok"):
            # only now: stopped first, the process could exit before the reply left, and
            # `serve --stop` would report a service lost mid-request
            threading.Thread(target=svc.stop, daemon=True).start()


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def deny(self, conn, req) -> str | None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _, uid, _ = struct.unpack("3i", creds)
        return None if uid == os.getuid() else f"uid {uid} may not use this service"


class _TCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def deny(self, conn, req) -> str | None:
        tok = req.get("token")
        ok = isinstance(tok, str) and hmac.compare_digest(tok, self.service.token)
        if ok and req.get("op") == "prove_files":   # the service would write files for a peer it cannot name
            return "prove_files is for clients on the Unix socket"
        return None if ok else "a wrong or missing token"
