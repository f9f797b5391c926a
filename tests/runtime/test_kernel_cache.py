"""The kernel cache's keys (`runtime.cache`): CPU kernels' keys name the host CPU."""
import platform

import pytest

import zktensor as zt
from zktensor.kernels import elementwise


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


def test_memo_remembers_per_package_source(tmp_path, monkeypatch):
    """`cache.memo`: computed once per package source, then read; another source (an edit:
    another fingerprint) computes again; an unwritable cache only costs a compute. The
    pairing module's key goes through it and comes out the same as computed afresh."""
    from zktensor.runtime import cache
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return f"value{len(calls)}"
    assert cache.memo("probe", compute) == "value1"
    assert cache.memo("probe", compute) == "value1" and len(calls) == 1
    monkeypatch.setattr(cache, "package_fingerprint", lambda: "another-source")
    assert cache.memo("probe", compute) == "value2" and len(calls) == 2
    monkeypatch.undo()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache's root should be a directory")
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(blocked))
    assert cache.memo("probe", compute) == "value3" and cache.memo("probe", compute) == "value4"

    from zktensor.kernels import pairing_cpu
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path / "fresh"))
    first = pairing_cpu._cache_key("bn254")                     # computed, then remembered
    assert list((tmp_path / "fresh" / "memo").iterdir())
    monkeypatch.setattr(pairing_cpu, "_traced", None)           # a second call must not trace
    assert pairing_cpu._cache_key("bn254") == first


def test_package_fingerprint_is_the_sources_hash(tmp_path, monkeypatch):
    """The fingerprint hashes the files' contents; it is remembered per their stat signature
    (a second call reads no source), an edit makes another one (even at once and of the
    same size: a file changed in the last RACY_S is read every time), and a damaged
    remembered value is computed again, never used."""
    import hashlib
    import os

    from zktensor.runtime import cache
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("A = 1\n")
    (pkg / "sub" / "b.py").write_text("B = 2\n")
    for f in (pkg / "a.py", pkg / "sub" / "b.py"):
        os.utime(f, (1e9, 1e9))                                # settled long ago
    monkeypatch.setattr(cache, "_PKG", pkg)
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path / "cache"))
    fingerprint = cache.package_fingerprint.__wrapped__

    def by_content():
        h = hashlib.sha256()
        for rel, text in (("a.py", "A = 1\n"), ("sub/b.py", "B = 2\n")):
            h.update(rel.encode() + b"\0" + text.encode())
        return h.hexdigest()[:16]
    first = fingerprint()
    assert first == by_content()
    monkeypatch.setattr(type(pkg), "read_bytes", lambda self: (_ for _ in ()).throw(AssertionError("read")))
    assert fingerprint() == first                              # remembered: no file read
    monkeypatch.undo()
    monkeypatch.setattr(cache, "_PKG", pkg)
    monkeypatch.setenv("ZKTENSOR_CACHE_DIR", str(tmp_path / "cache"))
    st = (pkg / "a.py").stat()
    (pkg / "a.py").write_text("A = 3\n")
    os.utime(pkg / "a.py", ns=(st.st_mtime_ns, st.st_mtime_ns))   # the same stat signature...
    assert fingerprint() == first                                 # ...is trusted when settled
    remembered = sorted((tmp_path / "cache" / "memo").iterdir())
    (pkg / "a.py").write_text("A = 4\n")                         # just now, the same size
    assert fingerprint() != first
    assert sorted((tmp_path / "cache" / "memo").iterdir()) == remembered   # racy: not remembered
    os.utime(pkg / "a.py", (2e9, 2e9))
    now = fingerprint()
    for f in (tmp_path / "cache" / "memo").iterdir():
        f.write_text("damaged")
    assert fingerprint() == now != "damaged"
