"""The tuner on the real ops at tiny sizes: it measures real kernels, rejects a candidate
that computes a wrong result (a deliberately corrupted one, injected as the fastest),
persists the winner, and the op then runs with it. The CLI end to end."""
import io
import json


import zktensor as zt
from zktensor.cli import main
from zktensor.tune import Task, Tuner
from zktensor.tune.cache import TuneCache, device_name
from zktensor.tune.progress import Progress
from zktensor.tune.space import Axis, Space
from zktensor.tune.workloads import MSMWorkload, MulWorkload, NTTWorkload, PreparedMSMWorkload


def corrupt(t):
    """The same limbs with one bit flipped: a plausible wrong kernel."""
    t = t.clone()
    t.view(-1)[3] ^= 1
    return t


class PoisonMul(MulWorkload):
    def run(self, cfg):
        out = super().run({k: v for k, v in cfg.items() if k != "poison"})
        return corrupt(out) if cfg.get("poison") else out


class PoisonNTT(NTTWorkload):
    def space(self):
        sp = super().space()
        # keep the test fast: no axis that compiles another kernel library
        keep = {"cpu_rows_log", "threads", "algorithm"}
        return Space(sp.base, [a for a in sp.axes if a.name in keep])

    def run(self, cfg):
        out = super().run({k: v for k, v in cfg.items() if k != "poison"})
        return corrupt(out) if cfg.get("poison") else out


class PoisonMSM(MSMWorkload):
    def space(self):
        c = super().space().base["window"]
        return Space({"window": c}, [Axis("window", [c + 1])])

    def run(self, cfg):
        out = super().run({k: v for k, v in cfg.items() if k != "poison"})
        return -out if cfg.get("poison") else out


class SmallPrepared(PreparedMSMWorkload):
    def space(self):
        sp = super().space()
        return Space(sp.base, [a for a in sp.axes if a.name == "copies"])


def make_tuner(path, workloads, extra=None, out=None):
    return Tuner(cache=TuneCache(path), progress=Progress(out or io.StringIO()), workloads=workloads,
                 extra_candidates=extra, min_time=0.0, min_runs=1, max_runs=2)


def test_mul_tuning_rejects_a_wrong_candidate(cache_file):
    out = io.StringIO()
    t = make_tuner(cache_file, {"mul": PoisonMul}, {"mul": [{"poison": True}]}, out)
    (res,) = t.run([Task("mul", "bn254.fr", 64)])
    assert res.status == "tuned", out.getvalue()
    assert len(res.rejected) == 1 and "wrong result" in next(iter(res.rejected.values()))
    assert "poison" not in res.config and res.config["strategy"] in ("fp64", "int64", "int32")
    assert "REJECTED (wrong result" in out.getvalue()
    # persisted, reloaded by a fresh cache object, and what the op now reads
    assert TuneCache(cache_file).lookup("mul", "bn254.fr", 64) == res.config
    assert zt.tune.lookup("mul", "bn254.fr", 64) == res.config
    F = zt.field("bn254.fr")
    a, b = F.random(64), F.random(64)
    assert (a * b).to_ints() == [x * y % F.p for x, y in zip(a.to_ints(), b.to_ints())]


def test_ntt_tuning(cache_file):
    t = make_tuner(cache_file, {"ntt": PoisonNTT}, {"ntt": [{"poison": True}]})
    (res,) = t.run([Task("ntt", "bn254.fr", 64)])
    assert res.status == "tuned" and len(res.rejected) == 1 and "poison" not in res.config
    F = zt.field("bn254.fr")
    x = F.random(64)
    with zt.config(tuned=False):
        ref = zt.ntt(x).to_ints()
    assert zt.ntt(x).to_ints() == ref          # runs with the tuned config
    # a coset batch, checked against the O(N^2) DFT
    (res,) = make_tuner(cache_file, {"ntt": PoisonNTT}).run([Task("ntt", "bn254.fr", 16, 3, options={"coset": True})])
    assert res.status == "tuned" and res.key.endswith("|ntt.b4|16")


def test_msm_tuning(cache_file):
    t = make_tuner(cache_file, {"msm": PoisonMSM}, {"msm": [{"poison": True}]})
    (res,) = t.run([Task("msm", "bn254.g1", 16)])
    assert res.status == "tuned" and len(res.rejected) == 1
    assert res.measured == 2
    assert TuneCache(cache_file).lookup("msm", "bn254.g1", 16) == res.config


def test_prepared_msm_tuning(cache_file):
    (res,) = make_tuner(cache_file, {"msm_prepared": SmallPrepared}).run(
        [Task("msm_prepared", "bn254.g1", 16, options={"max_copies": 2})])
    assert res.status == "tuned" and res.measured == 2
    G = zt.group("bn254.g1")
    bases = zt.msm_prepare(G.random(16))
    assert bases.window == res.config["window"]


def test_spaces_offer_only_what_the_hardware_has():
    import torch
    from zktensor.tune.space import hw_cpu, msm_space, mul_space, ntt_space
    hw = hw_cpu()
    sp = mul_space(torch.device("cpu"), 8)
    isa = sp.axes[0].values
    assert all(v["lanes"] <= hw["lanes"] and (not v["ifma"] or hw["ifma"]) for v in isa)
    assert {v["strategy"] for v in isa} == {"fp64", "int64", "int32"}
    nt = ntt_space(torch.device("cpu"), 12, 8)
    if hw["lanes"] == 8:
        rows = next(a for a in nt.axes if a.name == "cpu_rows_log").values
        assert rows and all(3 <= r <= 9 for r in rows)
    m = msm_space(torch.device("cpu"), zt.group("bn254.g1"), 1 << 12, prepared=True, max_copies=4)
    assert {a.name for a in m.axes} >= {"window", "chunks", "copies", "tree_block", "inverse_block", "strategy"}
    cu = ntt_space(torch.device("cuda"), 12, 8)
    assert {a.name for a in cu.axes} == {"B", "G", "num_warps", "max_block", "max_registers", "strategy"}
    assert {a.name for a in mul_space(torch.device("cuda"), 8).axes} == {"strategy", "block", "num_warps", "num_stages"}


def test_cli(cache_file, capsys):
    args = ["autotune", "--ops", "ntt", "--fields", "bn254.fr", "--sizes", "2^4", "--budget", "120",
            "--cache", str(cache_file), "--progress", "plain", "--min-time", "0"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "ntt bn254.fr 2^4" in text and "tuned" in text
    doc = json.loads(cache_file.read_text())
    assert f"{device_name('cpu')}|bn254.fr|ntt|16" in doc["entries"]
    assert main(args) == 0                                    # resumed: nothing left to do
    assert "already tuned" in capsys.readouterr().out
    assert main(["autotune", "--show", "--cache", str(cache_file)]) == 0
    assert "bn254.fr | ntt | 16" in capsys.readouterr().out
    assert main(["autotune", "--dry-run", "--ops", "groth16", "--sizes", "64k", "--cache", str(cache_file)]) == 0
    assert "msm_prepared bn254.g1 2^16" in capsys.readouterr().out
    assert main(["autotune", "--sizes", "lots", "--cache", str(cache_file)]) == 2
    assert main(["autotune", "--ops", "fft", "--cache", str(cache_file)]) == 2
