"""How the CPU target shares a launch between threads, and the host-memory setting.

A launch over one long row is cut into column ranges (whole vectors, pointer
offsets), a launch over many rows into row ranges; neither may change a word.
Checked against Python integers with thread counts that do not divide the
sizes, views with gaps between rows, and broadcast operands.
"""
import os
import platform
import subprocess
import sys

import pytest
import torch

import zktensor as zt
from zktensor.kernels import elementwise
from zktensor.runtime import threads

P = zt.field("bn254.fr").p


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_launch_split_by_columns_and_rows(monkeypatch, threads):
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", str(threads))
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0)       # split whatever the measured cost
    F = zt.field("bn254.fr")
    f = zt.jit(lambda a, b: a * b + a)
    n = elementwise.SPLIT_FROM + 4 * elementwise.SPLIT_ALIGN + 3      # a ragged tail
    xs = [(i * 0x9E3779B97F4A7C15 + 7) % P for i in range(n)]
    ys = [(i * 0x632BE59BD9B4E019 + 11) % P for i in range(n)]
    a, b = F.tensor(xs), F.tensor(ys)
    assert f(a, b).to_ints() == [(x * y + x) % P for x, y in zip(xs, ys)]
    # one broadcast operand: a constant column against a long row
    c = F.tensor([5])
    assert f(a, c).to_ints() == [(x * 5 + x) % P for x in xs]
    # many rows, taken from a wider tensor (row stride > row length)
    rows, cols = 5, 700
    zs = [(i * 0x2545F4914F6CDD1D + 3) % P for i in range(rows * (cols + 9))]
    wide = F.tensor(zs).reshape(rows, cols + 9)[:, :cols]
    got = f(wide, wide).to_ints()
    want = [[(v * v + v) % P for v in zs[r * (cols + 9):r * (cols + 9) + cols]] for r in range(rows)]
    assert got == want


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


@pytest.fixture
def pool_sizes(monkeypatch):
    """The thread counts of the pools that CPU launches ask for, in order."""
    seen = []
    real = threads.pool

    def spy(k):
        seen.append(k)
        return real(k)
    monkeypatch.setattr(threads, "pool", spy)
    return seen


def test_launch_budget_caps_threads(monkeypatch, pool_sizes):
    """Inside launch_budget(k) a launch uses at most k threads (the Groth16 graph gives each
    worker its share of the cores); the result is the same words."""
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "3")
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0)
    F = zt.field("bn254.fr")
    f = zt.jit(lambda a, b: a * b - b)
    n = 3 * elementwise.SPLIT_FROM
    xs = [(i * 0x9E3779B97F4A7C15 + 1) % P for i in range(n)]
    a = F.tensor(xs)
    want = [(x * x - x) % P for x in xs]
    seen = pool_sizes
    assert f(a, a).to_ints() == want and seen and set(seen) == {3}
    seen.clear()
    with threads.launch_budget(1):
        assert threads.launch_threads() == 1
        assert f(a, a).to_ints() == want
    assert seen == []                         # one thread: no pool at all
    with threads.launch_budget(2):
        assert f(a, a).to_ints() == want
    assert set(seen) == {2}
    assert threads.launch_threads() == 3  # the budget ends with its context


def test_split_follows_measured_cost(monkeypatch, pool_sizes):
    """A launch is shared by threads only when its kernel's measured one-thread time for the
    size reaches SPLIT_WORK; the words are the same either way."""
    F = zt.field("bn254.fr")
    f = zt.jit(lambda a, b: a * b + b * b)
    n = 4 * elementwise.SPLIT_FROM
    xs = [(i * 0x9E3779B97F4A7C15 + 5) % P for i in range(n)]
    a = F.tensor(xs)
    want = [(2 * x * x) % P for x in xs]
    seen = pool_sizes
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "1")
    assert f(a, a).to_ints() == want                 # one thread: timed, the cost recorded
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "2")
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 1e9)
    assert f(a, a).to_ints() == want and not seen    # cheaper than SPLIT_WORK: not split
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0.0)
    assert f(a, a).to_ints() == want and set(seen) == {2}


def test_run_many_split_follows_measured_cost(monkeypatch, pool_sizes):
    """`run_many` (the MSM tree's and batch inversion's launches) shares its columns among
    threads by the rule of one launch: only when the kernel's measured one-thread time for
    them reaches SPLIT_WORK (a first run is on one thread, timed); the words are the same."""
    from zktensor.runtime.target import choose
    from zktensor.kernels.field_programs import program as _program
    F = zt.field("bn254.fr")
    prog = elementwise.get_program(_program(F, ("test_run_many_mul_add",), 2, lambda a, b: a * b + b),
                                   *choose("cpu", None, None))
    n = 4 * elementwise.SPLIT_FROM
    xs = [(i * 0x9E3779B97F4A7C15 + 3) % P for i in range(n)]
    ys = [(i * 0x632BE59BD9B4E019 + 5) % P for i in range(n)]
    a, b = F.tensor(xs), F.tensor(ys)
    want = [(x * y + y) % P for x, y in zip(xs, ys)]

    def run():
        out = torch.zeros_like(a.data)
        prog.run_many([([a.data, b.data], [out], n)])
        return zt.FieldTensor(F, out).to_ints()
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "1")
    assert run() == want                              # one thread: timed, the cost recorded
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "2")
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 1e9)
    assert run() == want and not pool_sizes          # cheaper than SPLIT_WORK: not split
    monkeypatch.setattr(elementwise, "SPLIT_WORK", 0.0)
    assert run() == want and set(pool_sizes) == {2}


def test_broadcast_shapes_against_numpy():
    """Our broadcast rule (torch's would import sympy through torch._refs) is NumPy's, and a
    mismatch is a RuntimeError (torch's type) naming the shapes."""
    import numpy as np
    cases = [((2, 3), (3,)), ((1,), (4, 1)), ((), (5,)), ((2, 1, 3), (4, 1)), ((0,), (1,)), ((), ()),
             ((3, 1), (1, 1), (1, 4)), ((7,),)]
    for shapes in cases:
        assert elementwise.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    for bad in [((2,), (3,)), ((2, 3), (3, 2))]:
        with pytest.raises(RuntimeError, match="do not broadcast"):
            elementwise.broadcast_shapes(*bad)


_ARENA_PROBE = """
import ctypes, resource, threading
import zktensor  # noqa: F401 - applies the malloc setting
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


class _KeySeen(Exception):
    pass


def test_cpu_cache_keys_name_the_host_cpu(monkeypatch):
    """LLVM compiles CPU kernels for the host's CPU, so their cache keys carry its signature
    (machine, lanes, IFMA, a hash of all its flags): a cache copied to a CPU with other
    features misses instead of handing it instructions it may lack. Triton keys do not.
    The elementwise kernels, the NTT passes and the driver loops all ask for CPU targets."""
    from zktensor.runtime.target import choose
    from zktensor.runtime import cache, cpu_isa
    from zktensor.kernels import cpu_code, ntt_cpu
    from zktensor.kernels.field_programs import program as _program
    sig = cpu_isa.host_signature()
    assert sig.startswith(platform.machine()) and len(sig.rsplit("-", 1)[1]) == 12
    keys = {t: cache.entry_key("text", "fp64", t) for t in ("cpu", "cpu-ntt{}", "triton")}
    monkeypatch.setattr(cpu_isa, "host_signature", lambda: sig + "-elsewhere")
    assert cache.entry_key("text", "fp64", "cpu") != keys["cpu"]
    assert cache.entry_key("text", "fp64", "cpu-ntt{}") != keys["cpu-ntt{}"]
    assert cache.entry_key("text", "fp64", "triton") == keys["triton"]
    seen = []
    real = cache.entry_key

    def spy(text, strategy, target):
        seen.append(target)
        real(text, strategy, target)
        raise _KeySeen
    monkeypatch.setattr(cache, "entry_key", spy)
    F = zt.field("bn254.fr")
    prog = _program(F, ("test_cache_key_host",), 2, lambda a, b: a * b - b)
    for target in ("cpu", "triton"):
        with pytest.raises(_KeySeen):
            elementwise.get_program(prog, choose("cpu", None, None)[0], target)
    monkeypatch.setattr(ntt_cpu, "_libs", {})
    with pytest.raises(_KeySeen):
        ntt_cpu.library(F)
    with pytest.raises(_KeySeen):
        cpu_code.Loops("probe", lambda: "module {}", {})._load()
    cpu, triton, ntt, loops = seen
    assert cpu.startswith("cpu") and ntt.startswith("cpu") and loops.startswith("cpu")
    assert not triton.startswith("cpu")
