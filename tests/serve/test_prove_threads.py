"""`serve.server.ProveThreads`: proofs one after another run on one kept thread (not the
connection's new one), proofs side by side on threads of their own, and a proof's error
reaches its caller alone."""
from __future__ import annotations

import threading

import pytest

from zktensor.serve.server import ProveThreads


def test_one_thread_kept_for_proofs_in_turn():
    t = ProveThreads()
    seen = {t.run(threading.get_ident) for _ in range(5)}
    assert len(seen) == 1 and seen != {threading.get_ident()} and t.started == 1


def test_proofs_side_by_side_get_threads_of_their_own():
    t = ProveThreads()
    both = threading.Barrier(3, timeout=10)     # two proofs and this thread: none waits for the other

    def proof(out):
        both.wait()
        out.append(threading.get_ident())
    out: list = []
    callers = [threading.Thread(target=t.run, args=(proof, out)) for _ in range(2)]
    for c in callers:
        c.start()
    both.wait()
    for c in callers:
        c.join(10)
    assert len(set(out)) == 2 and t.started == 2
    assert t.run(threading.get_ident) in out and t.started == 2     # an idle one is used again


def test_an_error_reaches_its_caller():
    t = ProveThreads()

    def bad():
        raise KeyError("bad witness")
    with pytest.raises(KeyError, match="bad witness"):
        t.run(bad)
    assert t.run(lambda: 7) == 7 and t.started == 1
