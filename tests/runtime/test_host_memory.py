"""The host-memory setting (`runtime.host_memory`): glibc keeps freed blocks for reuse
unless ZKTENSOR_MALLOC=system, and worker threads share one arena."""
import os
import subprocess
import sys

import pytest


def _keep_result(env):
    code = "from zktensor.runtime.host_memory import keep_freed_memory as k; print(k(), k())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    return out.stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_host_memory_setting():
    env = {k: v for k, v in os.environ.items() if k != "ZKTENSOR_MALLOC"}
    import platform
    if platform.libc_ver()[0] == "glibc":
        assert _keep_result(env) == ["True", "True"]
    assert _keep_result({**env, "ZKTENSOR_MALLOC": "system"}) == ["False", "False"]


_ARENA_PROBE = """
import ctypes, resource, threading
import zktensor, numpy  # noqa: F401,E401 - the setting applies before numpy's import
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
n, faults = 200 << 20, []
def work():     # a worker thread, as the prover graph's: its second 200 MiB block
    for _ in range(2):
        f0 = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
        p = libc.malloc(n)
        ctypes.memset(p, 1, n)
        libc.free(p)
        faults.append(resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - f0)
t = threading.Thread(target=work)
t.start()
t.join()
print(faults[1])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc mallopt")
def test_worker_threads_reuse_freed_blocks():
    """With the setting, a worker thread's large block, freed and asked for again, comes back
    warm (one arena: no fresh mmap, no page faults); without it, every page faults again."""
    import platform
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("glibc only")
    env = {k: v for k, v in os.environ.items() if k not in ("ZKTENSOR_MALLOC", "MALLOC_ARENA_MAX")}
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))

    def second_faults(extra):
        out = subprocess.run([sys.executable, "-c", _ARENA_PROBE], env={**env, **extra, "PYTHONPATH": root},
                             capture_output=True, text=True, check=True, cwd=root)
        return int(out.stdout.split()[-1])
    pages = (200 << 20) // 4096
    assert second_faults({}) < pages // 20
    assert second_faults({"ZKTENSOR_MALLOC": "system"}) > pages // 2


_WHEN = """
import sys
import zktensor  # noqa: F401
from zktensor.runtime import host_memory
before = host_memory._done
import numpy  # noqa: F401
print(before, host_memory._done, "ctypes" in sys.modules)
"""


def test_setting_waits_for_the_first_heavy_import():
    """`import zktensor` alone (the thin client's start-up) leaves malloc and ctypes alone; the
    first import of numpy applies the setting."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
    out = subprocess.run([sys.executable, "-c", _WHEN], capture_output=True, text=True, check=True, cwd=root,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.stdout.split() == ["False", "True", "True"]
