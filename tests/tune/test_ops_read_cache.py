"""The ops read the tuning cache through zktensor.config, and zt.config(...) and explicit
arguments override it: elementwise ops (strategy, CPU lanes/IFMA), zt.ntt (NTTConfig
fields and strategy), zt.msm / msm_prepare (MSMConfig), the Groth16 prover."""
from pathlib import Path

import pytest

import zktensor as zt
from zktensor.config import config, get
from zktensor.runtime.target import choose
from zktensor.tune.resolve import lookup, tuned_scope
from zktensor.runtime.cpu_isa import cpu_options
from zktensor.ops import msm as msm_mod
from zktensor.ops import ntt as ntt_mod
from zktensor.tune.cache import TuneCache, device_name

F = zt.field("bn254.fr")
HW = None


def hw():
    global HW
    if HW is None:
        with config(tuned=False):
            HW = cpu_options("fp64")
    return HW


def put(path, op, field, b, cfg, complete=True):
    TuneCache(path).put({"device": device_name("cpu"), "field": field, "op": op, "bucket": b, "config": cfg,
                         "time_s": 1e-3, "complete": complete})


@pytest.fixture
def strategies(monkeypatch):
    """The strategies elementwise programs are compiled for, in call order."""
    import zktensor.kernels.field_programs as E
    seen = []
    orig = E.get_program

    def spy(prog, strategy, target):
        seen.append(strategy)
        return orig(prog, strategy, target)
    monkeypatch.setattr(E, "get_program", spy)
    return seen


def test_layering_without_kernels(cache_file, monkeypatch):
    monkeypatch.delenv("ZKTENSOR_STRATEGY", raising=False)
    monkeypatch.delenv("ZKTENSOR_CPU_LANES", raising=False)
    monkeypatch.delenv("ZKTENSOR_CPU_IFMA", raising=False)
    default = choose("cpu")[0]
    with tuned_scope("mul", "bn254.fr", 64, "cpu", values={"strategy": "int32", "lanes": 1, "block": 256}):
        assert choose("cpu") == ("int32", "cpu")
        assert choose("cpu", "int64") == ("int64", "cpu")                  # the caller's argument
        with config(strategy="fp64"):
            assert choose("cpu")[0] == "fp64"                              # zt.config over the cache
        assert get("block") == 256 and get("num_warps", 4) == 4
        with config(block=64):
            assert get("block") == 64
        assert cpu_options("fp64")["lanes"] == 1
        monkeypatch.setenv("ZKTENSOR_STRATEGY", "int64")
        assert choose("cpu")[0] == "int64"                                 # the environment over the cache
        monkeypatch.delenv("ZKTENSOR_STRATEGY")
        # an enclosing op's tuned values win over an inner op's
        with tuned_scope("mul", "bn254.fr", 64, "cpu", values={"strategy": "fp64"}):
            assert choose("cpu")[0] == "int32"
        # a CPU entry's strategy is not used for the Triton target
        assert choose("cpu", target="triton")[0] == "int32"
    assert choose("cpu")[0] == default and get("block") is None
    with config(lanes=1, ifma=False):
        assert cpu_options("fp64") == {"lanes": 1, "ifma": False}
    with config(lanes=16, ifma=True):                                       # never more than the CPU has
        assert cpu_options("fp64") == hw()
    with pytest.raises(TypeError, match="unknown config"):
        with config(blocks=4):
            pass


def test_elementwise_ops_use_the_tuned_strategy(cache_file, strategies):
    a, b = F.random(64), F.random(64)
    want = [x * y % F.p for x, y in zip(a.to_ints(), b.to_ints())]
    put(cache_file, "mul", "bn254.fr", 64, {"strategy": "int64", "lanes": 1, "ifma": False})
    assert lookup("mul", "bn254.fr", 64, "cpu") == {"strategy": "int64", "lanes": 1, "ifma": False}
    strategies.clear()
    assert (a * b).to_ints() == want
    assert strategies[0] == "int64"
    strategies.clear()
    with config(strategy="int32"):
        assert (a * b).to_ints() == want
    assert strategies[0] == "int32"
    strategies.clear()
    with config(tuned=False):
        assert (a * b).to_ints() == want
    assert strategies[0] == choose("cpu")[0]
    # far from the tuned bucket (more than a factor of 4): the defaults
    strategies.clear()
    F.random(4096) * F.random(4096)
    assert strategies and "int64" not in strategies


def test_ntt_uses_the_tuned_config(cache_file, monkeypatch):
    seen = []
    orig = ntt_mod.run_plan

    def spy(plan, data, cfg, out=None):
        seen.append(cfg)
        return orig(plan, data, cfg, out)
    monkeypatch.setattr(ntt_mod, "run_plan", spy)
    x = F.random(128)
    with config(tuned=False):
        ref = zt.ntt(x).to_ints()
    assert seen[-1].cpu_rows_log in (None, 4)                   # the cost model: a little over half
    put(cache_file, "ntt", "bn254.fr", 128, {"cpu_rows_log": 3, "threads": 1})
    assert zt.ntt(x).to_ints() == ref
    assert (seen[-1].cpu_rows_log, seen[-1].threads) == (3, 1)
    with config(ntt={"threads": 2}):                            # fields over the tuned config
        zt.ntt(x)
    assert (seen[-1].cpu_rows_log, seen[-1].threads) == (3, 2)
    with config(ntt=zt.NTTConfig(cpu_unroll=2)):                # a whole config replaces it
        zt.ntt(x)
    assert seen[-1] == zt.NTTConfig(cpu_unroll=2)
    zt.ntt(x, config=zt.NTTConfig(G=8))                        # the call's own argument
    assert seen[-1] == zt.NTTConfig(G=8)
    zt.ntt(x, threads=1)                                        # keyword overrides over the tuned config
    assert (seen[-1].cpu_rows_log, seen[-1].threads) == (3, 1)
    # a batch of 3 reads its own entry (ntt.b4) first, else the unbatched one
    xs = F.random((3, 128))
    zt.ntt(xs)
    assert seen[-1].cpu_rows_log == 3
    put(cache_file, "ntt.b4", "bn254.fr", 128, {"cpu_rows_log": 4})
    zt.ntt(xs)
    assert seen[-1].cpu_rows_log == 4


def test_ntt_tuned_strategy_reaches_its_kernels(cache_file, strategies):
    x = F.random(16)
    with config(tuned=False):
        ref = zt.ntt(x).to_ints()
    put(cache_file, "ntt", "bn254.fr", 16, {"strategy": "int64", "algorithm": "stages"})
    strategies.clear()
    X = zt.ntt(x)
    inside = list(strategies)                    # (to_ints converts outside the NTT)
    assert X.to_ints() == ref
    assert inside and set(inside) == {"int64"}


def test_msm_uses_the_tuned_config(cache_file):
    G = zt.group("bn254.g1")
    P = G.random(16)
    k = F.random(16)
    with config(tuned=False):
        ref = zt.msm(k, P).to_affine()
    put(cache_file, "msm", "bn254.g1", 16, {"window": 3, "accumulation": "tree"})
    st = {}
    assert zt.msm(k, P, stats=st).to_affine() == ref and st["window"] == 3
    with config(msm={"window": 5, "accumulation": "tree"}):
        zt.msm(k, P, stats=st)
    assert st["window"] == 5
    zt.msm(k, P, config=zt.MSMConfig(window=6, accumulation="tree"), stats=st)
    assert st["window"] == 6
    put(cache_file, "msm", "bn254.g1", 16, {"accumulation": "lanes"})
    assert zt.msm(k, P, stats=st).to_affine() == ref and st["accumulation"] == "lanes"
    put(cache_file, "msm_prepared", "bn254.g1", 16, {"window": 4, "checkpoint": 16, "accumulation": "tree"})
    bases = zt.msm_prepare(P)
    assert (bases.window, bases.M) == (4, 16)
    assert zt.msm(k, bases, stats=st).to_affine() == ref and st["window"] == 4


ZKEY = Path(__file__).resolve().parents[1] / "fixtures" / "build" / "multiplier" / "circuit_final.zkey"
WTNS = ZKEY.with_name("witness.wtns")


@pytest.mark.skipif(not ZKEY.exists(), reason="needs the circom/snarkjs fixtures (scripts/fixtures.sh)")
def test_prover_reads_the_cache_and_groth16_plan(cache_file):
    from zktensor.groth16.formats import read_zkey
    from zktensor.groth16.prover import Prover
    from zktensor.groth16.verifier import verify
    from zktensor.tune import plan
    z = read_zkey(ZKEY)
    n = len(z.A)
    default = msm_mod.choose_window(n, zt.group(f"{z.curve}.g1").r.bit_length(), checkpoint=1 << 10)
    tuned = 5 if default != 5 else 6
    put(cache_file, "msm_prepared", "bn254.g1", n, {"window": tuned})
    p = Prover(z, device="cpu")
    assert p.bases["ab1c"].prepared.window == tuned
    proof, public = p.prove(WTNS)
    assert verify(z, public, proof)
    # an explicit msm_config: the cache is not consulted
    q = Prover(z, device="cpu", msm_config=zt.MSMConfig(window=default))
    assert q.bases["ab1c"].prepared.window == default
    tasks = plan(["groth16"], zkey=ZKEY, device="cpu")
    assert tasks[0].op == "ntt" and tasks[0].batch == 3 and tasks[0].size == z.domain_size
    assert {t.op for t in tasks} == {"ntt", "msm_prepared"}
