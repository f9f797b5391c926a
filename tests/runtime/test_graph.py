"""The scheduler: data edges, order of ready nodes, errors, profiles and traces (no compiler)."""
import json
import threading
import time

import pytest
import torch

from zktensor.runtime.graph import Graph, value_bytes


def test_values_flow_along_edges():
    g = Graph("t")
    g.add("a", lambda x: x + 1, ["x"])
    g.add("b", lambda a: a * 10, ["a"])
    g.add("c", lambda a, b: (a, b), ["a", "b"])
    run = g.run({"x": 1}, workers=2)
    assert run["c"] == (2, 20)
    assert {s.name for s in run.stats} == {"a", "b", "c"}
    assert g.topological_order() == ["a", "b", "c"]


def test_every_node_starts_after_its_inputs_end():
    g = Graph("t")
    g.add("a", lambda: time.sleep(0.02) or 1, lane="l1")
    g.add("b", lambda: time.sleep(0.01) or 2, lane="l2")
    g.add("c", lambda a, b: a + b, ["a", "b"], lane="l1")
    run = g.run(workers=3)
    st = run.by_name()
    assert run["c"] == 3
    assert st["c"].start_s >= max(st["a"].end_s, st["b"].end_s)


def test_independent_nodes_overlap():
    g = Graph("t")
    barrier = threading.Barrier(2, timeout=5)   # deadlocks unless both run at once
    g.add("a", lambda: (barrier.wait(), 1)[1], lane="x")
    g.add("b", lambda: (barrier.wait(), 2)[1], lane="y")
    run = g.run(workers=2)
    assert (run["a"], run["b"]) == (1, 2)


def test_ready_order_priority_then_critical_then_rank():
    order = []
    g = Graph("t")
    g.add("side", lambda: order.append("side"), lane="s")
    g.add("crit", lambda: order.append("crit"), lane="p", critical=True)
    g.add("check", lambda: order.append("check"), lane="c", priority=10)
    g.add("deep1", lambda: order.append("deep1"), lane="s")
    g.add("deep2", lambda x: order.append("deep2"), ["deep1"], lane="s")
    g.run(workers=1)
    assert order[:3] == ["check", "crit", "deep1"]


def test_first_error_stops_the_run():
    ran = []
    g = Graph("t")
    g.add("bad", lambda: (_ for _ in ()).throw(ValueError("constraint 3 fails")), priority=5)
    g.add("later", lambda b: ran.append(1), ["bad"])
    g.add("other", lambda: ran.append(2))
    with pytest.raises(ValueError, match="constraint 3"):
        g.run(workers=1)
    assert ran == []          # nothing starts after the failure


def test_graph_errors():
    g = Graph("t")
    g.add("a", lambda x: x, ["nope"])
    with pytest.raises(ValueError, match="needs 'nope'"):
        g.run()
    g = Graph("t")
    g.add("a", lambda b: b, ["b"])
    g.add("b", lambda a: a, ["a"])
    with pytest.raises(ValueError, match="cycle"):
        g.run()
    with pytest.raises(ValueError, match="twice"):
        g.add("a", lambda: 0)
    with pytest.raises(ValueError, match="worker 'remote' is not one of"):
        g.add("c", lambda: 0, worker="remote")


def test_values_not_kept_are_dropped():
    g = Graph("t")
    g.add("big", lambda: torch.zeros(1000))
    g.add("out", lambda b: int(b.numel()), ["big"])
    run = g.run(keep=["out"])
    assert run.values == {"out": 1000}


def test_profile_table_and_chrome_trace(tmp_path):
    g = Graph("t")
    g.add("alloc", lambda: torch.ones(1 << 20, dtype=torch.int32), lane="poly", critical=True, kind="poly")
    g.add("sum", lambda t: int(t.sum()), ["alloc"], lane="msm", kind="msm")
    run = g.run(profile=True)
    st = run.by_name()
    assert st["alloc"].output_bytes == 4 << 20
    assert st["alloc"].peak_host_bytes > 0 and run.peak_host_bytes >= st["alloc"].peak_host_bytes
    text = run.table()
    assert "alloc" in text and "critical path" in text
    path = tmp_path / "trace.json"
    run.write_trace(path)
    trace = json.loads(path.read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["name"] for e in spans} == {"alloc", "sum"}
    assert all(e["dur"] >= 0 and "tid" in e for e in spans)
    assert any(e["ph"] == "C" for e in trace["traceEvents"])    # memory counter track
    names = {e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "thread_name"}
    assert names == {"poly", "msm"}
    assert "->" in g.to_dot()


def test_value_bytes():
    assert value_bytes({"a": torch.zeros(4, dtype=torch.int64), "b": [torch.zeros(2, dtype=torch.int32)]}) == 40


def test_cpu_nodes_share_the_cores(monkeypatch):
    """A running node's launches get cores // (nodes running at that moment): two side by
    side get half each, the one left running gets them all, and the caller's own setting
    is untouched after the run."""
    from zktensor.runtime import threads
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "4")
    both = threading.Barrier(2, timeout=10)

    def a():
        both.wait()
        x = threads.launch_threads()
        both.wait()
        return x

    def b():
        both.wait()
        x = threads.launch_threads()
        both.wait()
        deadline = time.time() + 10                 # until a's node has ended
        while threads.launch_threads() != 4 and time.time() < deadline:
            time.sleep(0.001)
        return x, threads.launch_threads()

    g = Graph("budget")
    g.add("a", a, inputs=[], lane="a")
    g.add("b", b, inputs=[], lane="b")
    assert g.run(workers=2).values == {"a": 2, "b": (2, 4)}
    g1 = Graph("alone")
    for name in ("a", "b"):
        g1.add(name, threads.launch_threads, inputs=[], lane=name)
    assert g1.run(workers=1).values == {"a": 4, "b": 4}
    assert threads.launch_threads() == 4


def test_external_node_takes_no_worker_slot_but_a_core_share():
    """An external node (its work done by another process) waits on a thread of its own: with
    one worker, a local node runs while it waits (here it waits for that local node), and
    that node's launches get the cores' share of two running nodes, as does the external one."""
    from zktensor.runtime.threads import launch_threads
    r_started, l_done = threading.Event(), threading.Event()

    def remote():
        r_started.set()
        return l_done.wait(5), launch_threads()

    def local():
        assert r_started.wait(5)
        n = launch_threads()
        l_done.set()
        return n
    g = Graph("t")
    g.add("r", remote, lane="helper", worker="external")
    g.add("l", local, lane="main")
    run = g.run(workers=1)
    assert run["r"][0] is True
    assert run["l"] == max(1, launch_threads() // 2)
    assert run["r"][1] == max(1, launch_threads() // 2)      # its fixed share: cores // (1 + 1)
    assert run.external == ("r",)
    table = run.table()
    assert "on 1 worker and 1 external node" in table and "(external: r;" in table


def test_a_launch_waiting_for_its_share_gets_it_when_a_node_ends(monkeypatch):
    """`threads.wait_for_share`: a launch's second thread, refused while two nodes run (two
    cores), is let in once the other node has ended (the graph announces it); and gives up
    when the launch's work is all taken."""
    from zktensor.runtime import threads
    monkeypatch.setenv("ZKTENSOR_NUM_THREADS", "2")
    started, ended = threading.Event(), []

    def a():
        assert started.wait(10)
        time.sleep(0.02)
        ended.append(time.perf_counter())

    def b():
        budget, most = threads.current_budget()
        first = budget()
        started.set()
        return first, most, threads.wait_for_share(1, budget, lambda: False), time.perf_counter()
    g = Graph("share")
    g.add("a", a, inputs=[], lane="a")
    g.add("b", b, inputs=[], lane="b")
    first, most, got, at = g.run(workers=2).values["b"]
    assert (first, most, got) == (1, 2, True) and at > ended[0]
    assert threads.wait_for_share(5, lambda: 1, lambda: True) is False
    with threads.launch_budget(3):
        budget, most = threads.current_budget()
        assert (budget(), most) == (3, 3)


def test_one_worker_runs_the_local_nodes_on_the_calling_thread():
    """With one worker the caller's thread runs the local nodes (no hand-off a node); an
    external node still gets a thread of its own, started before the local node that was
    ready beside it; an error in a node run here stops the run once the external one ends."""
    me = threading.get_ident()
    started = threading.Event()

    def remote():
        started.set()
        return threading.get_ident()
    g = Graph("inline")
    g.add("a", lambda: (started.wait(5), threading.get_ident()), inputs=[], lane="a")
    g.add("b", lambda x: threading.get_ident(), inputs=["a"], lane="a")
    g.add("r", remote, inputs=[], lane="helper", worker="external", priority=-1)
    run = g.run(workers=1)
    assert run["a"] == (True, me) and run["b"] == me and run["r"] != me
    assert g.run(workers=2)["b"] != me
    ended = threading.Event()

    def slow_remote():
        time.sleep(0.05)
        ended.set()

    def bad():
        raise KeyError("bad node")
    g2 = Graph("inline_error")
    g2.add("r", slow_remote, inputs=[], lane="helper", worker="external")
    g2.add("x", bad, inputs=[], lane="a")
    g2.add("y", lambda x: x, inputs=["x"], lane="a")
    with pytest.raises(KeyError, match="bad node"):
        g2.run(workers=1)
    assert ended.is_set()
