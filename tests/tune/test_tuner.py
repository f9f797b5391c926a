"""The tuner's mechanics on a toy workload (no kernels, milliseconds): it finds the
fastest correct configuration, persists and reloads it, rejects a wrong candidate even
when it is the fastest, resumes after an interrupt without measuring again, shares a
budget, and skips what is already tuned."""
import io
import json
import time

import pytest

from zktensor.tune import Task, TrustedPathError, Tuner, autotune, plan, targets
from zktensor.tune.cache import TuneCache, device_name
from zktensor.tune.progress import Progress, make_progress
from zktensor.tune.space import Axis, Space
from zktensor.tune.workloads import Workload

# seconds a run of each "chunk" takes; chunk 16 is the fastest correct one
COST = {1: 0.012, 4: 0.006, 16: 0.001, 64: 0.009}


class Toy(Workload):
    op = "toy"
    calls: list = []
    interrupt_at: int | None = None

    def space(self):
        return Space({"chunk": 1, "mode": "a"}, [Axis("chunk", [4, 16, 64]), Axis("mode", ["b"])])

    def reference(self):
        self.ref = sum(range(100))
        return self.ref

    def run(self, cfg):
        Toy.calls.append(dict(cfg))
        if Toy.interrupt_at is not None and len({json.dumps(c, sort_keys=True) for c in Toy.calls}) >= Toy.interrupt_at:
            raise KeyboardInterrupt
        if cfg.get("explode"):
            raise RuntimeError("kernel failed to compile")
        time.sleep(0.0001 if cfg.get("poison") else COST[cfg["chunk"]] + (0.006 if cfg["mode"] == "b" else 0))
        return self.ref + (1 if cfg.get("poison") else 0)      # the poisoned candidate is fast and wrong

    def check(self, out):
        return None if out == self.ref else f"wrong result {out}, expected {self.ref}"


class BadReference(Toy):
    def reference(self):
        raise TrustedPathError("the default path is wrong")


@pytest.fixture(autouse=True)
def reset_toy():
    Toy.calls = []
    Toy.interrupt_at = None


def tuner(cache_file, **kw):
    kw.setdefault("progress", Progress(io.StringIO()))
    return Tuner(cache=TuneCache(cache_file), workloads={"toy": Toy, "bad": BadReference}, min_time=0.0,
                 min_runs=3, max_runs=3, **kw)


TASK = Task("toy", "bn254.fr", 1000)


def test_finds_persists_and_reloads_the_winner(cache_file):
    out = io.StringIO()
    (res,) = tuner(cache_file, progress=Progress(out)).run([TASK])
    assert res.status == "tuned" and res.config == {"chunk": 16, "mode": "a"}
    assert res.speedup > 2
    e = json.loads(cache_file.read_text())["entries"][f"{device_name('cpu')}|bn254.fr|toy|1024"]
    assert e["config"] == {"chunk": 16, "mode": "a"} and e["complete"] and e["default_config"] == {"chunk": 1, "mode": "a"}
    assert len(e["measured"]) == 5
    assert TuneCache(cache_file).lookup("toy", "bn254.fr", 1000) == {"chunk": 16, "mode": "a"}
    text = out.getvalue()
    assert "[1/1] toy bn254.fr 1000" in text and "chunk=16" in text and "best: chunk=16" in text


def test_rejects_a_wrong_candidate_even_when_fastest(cache_file):
    t = tuner(cache_file, extra_candidates={"toy": [{"chunk": 4, "poison": True}, {"chunk": 4, "explode": True}]})
    (res,) = t.run([TASK])
    assert res.config == {"chunk": 16, "mode": "a"}
    assert len(res.rejected) == 2
    reasons = sorted(res.rejected.values())
    assert reasons[0].startswith("error: RuntimeError: kernel failed") and reasons[1].startswith("wrong result 4951")
    e = TuneCache(cache_file).refresh().entries.popitem()[1]
    assert any('"poison": true' in k for k in e["rejected"]) and not any("poison" in k for k in e["measured"])
    # a rejected candidate is not tried again on a later run
    Toy.calls = []
    tuner(cache_file, force=False, extra_candidates={"toy": [{"chunk": 4, "poison": True}]}).run([TASK])
    assert not any(c.get("poison") for c in Toy.calls)


def test_every_candidate_wrong(cache_file):
    class AllWrong(Toy):
        def check(self, out):
            return "wrong"
    t = Tuner(cache=TuneCache(cache_file), workloads={"toy": AllWrong}, progress=Progress(io.StringIO()),
              min_time=0.0, min_runs=1, max_runs=1)
    (res,) = t.run([TASK])
    assert res.status == "error" and res.config is None and "rejected" in res.message
    assert TuneCache(cache_file).lookup("toy", "bn254.fr", 1000) is None


def test_interrupt_then_resume_without_measuring_again(cache_file):
    Toy.interrupt_at = 4          # Ctrl-C while the 4th distinct candidate runs
    with pytest.raises(KeyboardInterrupt):
        tuner(cache_file).run([TASK])
    e = TuneCache(cache_file).refresh().entries.popitem()[1]
    assert not e["complete"] and len(e["measured"]) == 3
    assert e["config"] == {"chunk": 16, "mode": "a"}           # the best so far is usable at once
    assert TuneCache(cache_file).lookup("toy", "bn254.fr", 1000) == {"chunk": 16, "mode": "a"}
    Toy.interrupt_at = None
    Toy.calls = []
    (res,) = tuner(cache_file).run([TASK])
    assert res.status == "tuned" and res.config == {"chunk": 16, "mode": "a"}
    ran = {json.dumps(c, sort_keys=True) for c in Toy.calls}
    assert ran == {json.dumps({"chunk": 64, "mode": "a"}), json.dumps({"chunk": 16, "mode": "b"})}
    # complete now: a third run measures nothing
    Toy.calls = []
    (res,) = tuner(cache_file).run([TASK])
    assert res.status == "cached" and Toy.calls == []
    # --force tunes again
    (res,) = tuner(cache_file, force=True).run([TASK])
    assert res.status == "tuned" and len(Toy.calls) > 5


def test_budget(cache_file):
    res = tuner(cache_file, budget=0).run([TASK, Task("toy", "bn254.fr", 4096)])
    assert [r.status for r in res] == ["partial", "partial"]
    assert not cache_file.exists() or not json.loads(cache_file.read_text())["entries"]
    # a tiny budget: the first candidate runs, the task ends partial with what it has
    (res,) = tuner(cache_file, budget=0.001).run([TASK])
    assert res.status == "partial" and res.config == {"chunk": 1, "mode": "a"}
    assert not TuneCache(cache_file).refresh().entries.popitem()[1]["complete"]


def test_a_started_task_measures_its_default(cache_file, monkeypatch):
    """Its share spent on setup (a slow reference) before any candidate: the default is
    measured all the same, and the task ends partial with it, not empty."""
    slow = Toy.reference
    monkeypatch.setattr(Toy, "reference", lambda self: (time.sleep(0.01), slow(self))[1])
    (res,) = tuner(cache_file, budget=0.002).run([TASK])
    assert res.status == "partial" and res.config == {"chunk": 1, "mode": "a"}
    assert Toy.calls and all(c == {"chunk": 1, "mode": "a"} for c in Toy.calls)


def test_broken_reference_is_an_error_not_a_crash(cache_file):
    res = tuner(cache_file).run([Task("bad", "bn254.fr", 8), TASK])
    assert res[0].status == "error" and "default path is wrong" in res[0].message
    assert res[1].status == "tuned"


def test_plan_and_targets():
    assert targets("mul", "bn254") == ["bn254.fr", "bn254.fq"]
    assert targets("ntt", "bls12_381") == ["bls12_381.fr"]
    assert targets("msm", "bn254.fr") == ["bn254.g1"] and targets("msm", "bn254.g2") == ["bn254.g2"]
    tasks = plan(["mul", "ntt", "msm"], ["bn254"], [256], "cpu")
    assert [(t.op, t.field, t.size) for t in tasks] == [
        ("mul", "bn254.fr", 256), ("mul", "bn254.fq", 256), ("ntt", "bn254.fr", 256), ("msm", "bn254.g1", 256)]
    g = plan(["groth16"], ["bn254"], [1000], "cpu")
    assert [(t.op, t.field, t.size, t.batch, bool(t.options.get("coset"))) for t in g] == [
        ("ntt", "bn254.fr", 1024, 3, True), ("msm_prepared", "bn254.g1", 1024, 1, False)]
    with pytest.raises(ValueError, match="unknown op"):
        plan(["fft"], ["bn254"], [8], "cpu")


def test_autotune_api(cache_file):
    res = autotune(tasks=[TASK], workloads={"toy": Toy}, progress=Progress(io.StringIO()), budget=30)
    assert res[0].config["chunk"] in (4, 16)       # real timing with default repeats: a fast one


def test_progress_fallback():
    s = io.StringIO()
    p = make_progress("auto", stream=s)             # not a terminal: plain lines
    assert type(p) is Progress
    p.start_task(1, 2, "x", 3)
    p.candidate(1, 3, "y")
    p.end_task("z")
    assert s.getvalue().splitlines() == ["[1/2] x: up to 3 candidates", "    (1/3) y", "    -> z"]
