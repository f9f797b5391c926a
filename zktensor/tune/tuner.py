"""The tuning run: tasks -> candidates -> checked measurements -> cache entries.

For each task (op, field, size, batch, device) the tuner

1. skips it when the cache holds a complete entry for its key (unless `force`);
2. builds the workload's inputs and its reference, which is checked against Python
   integers (`workloads`); a broken reference stops that task, not the run;
3. walks the op's search space by coordinate descent (`space`): the cost model's
   configuration first, then every value of each axis with the others at the best so far;
4. for every candidate: untimed setup, one run whose output must equal the reference
   (else the candidate is rejected and never used), then timed runs (at least
   `min_runs`, until `min_time` seconds, at most `max_runs`), median; it becomes the
   best only if it beats the best so far by `min_gain` (3%: noise does not choose);
5. writes the entry (best so far, every measurement and rejection) to the cache after
   every candidate, atomically, so Ctrl-C or a crash loses at most the candidate being
   measured, and the next run resumes where this one stopped (measured candidates are
   not measured again).

The budget (seconds, for the whole run) is shared among the tasks not yet complete: a
task may use what is left divided by the tasks still to go (a task started measures its
first candidate, the default, whatever its share); a task cut short keeps its best so
far, marked incomplete, and is resumed by the next run.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field

from .cache import TuneCache, bucket, default_cache, device_name, entry_key, op_key
from .progress import Progress
from .space import Axis, canonical, clean
from .workloads import WORKLOADS, Task, TrustedPathError, Workload


@dataclass
class Result:
    task: Task
    key: str
    status: str                      # tuned, partial, cached, error
    config: dict | None = None
    time_s: float | None = None
    default_time_s: float | None = None
    measured: int = 0
    rejected: dict = field(default_factory=dict)
    message: str = ""

    @property
    def speedup(self) -> float | None:
        if self.time_s and self.default_time_s:
            return self.default_time_s / self.time_s
        return None


def describe(cfg: dict, base: dict) -> str:
    diff = {k: v for k, v in clean(cfg).items() if base.get(k) != v}
    if not diff:
        return "default (cost model)"
    return " ".join(f"{k}={v}" for k, v in diff.items())


def fmt_s(t: float | None) -> str:
    if t is None:
        return "-"
    for unit, f in (("s", 1), ("ms", 1e3), ("us", 1e6)):
        if t * f >= 1:
            return f"{t * f:.3g} {unit}"
    return f"{t * 1e9:.3g} ns"


class Tuner:
    def __init__(self, cache: TuneCache | None = None, budget: float | None = None,
                 progress: Progress | None = None, force: bool = False, min_time: float = 0.1,
                 min_runs: int = 3, max_runs: int = 20, workloads: dict | None = None,
                 extra_candidates: dict | None = None, min_gain: float = 0.03):
        self.cache = cache or default_cache()
        if self.cache.path is None:
            raise RuntimeError("the tuning cache is off (ZKTENSOR_TUNE_CACHE=off): nowhere to keep results")
        self.budget = budget
        self.progress = progress or Progress()
        self.force = force
        self.min_time, self.min_runs, self.max_runs = min_time, min_runs, max_runs
        self.min_gain = min_gain
        self.workloads = {**WORKLOADS, **(workloads or {})}
        self.extra = extra_candidates or {}

    # -- keys ----------------------------------------------------------------------------
    def key_of(self, task: Task) -> tuple[str, str, str, int]:
        return device_name(task.device), task.field, op_key(task.op, task.batch), bucket(task.size)

    def entry_of(self, task: Task) -> dict | None:
        self.cache.refresh()
        return self.cache.get(*self.key_of(task))

    # -- the run ---------------------------------------------------------------------------
    def run(self, tasks: list[Task]) -> list[Result]:
        start = time.monotonic()
        deadline = start + self.budget if self.budget is not None else math.inf
        results: list[Result] = []
        todo = []
        for t in tasks:
            e = self.entry_of(t)
            if e is not None and e.get("complete") and not self.force:
                results.append(Result(t, entry_key(*self.key_of(t)), "cached", e.get("config"), e.get("time_s"),
                                      e.get("default_time_s"), message="already tuned"))
            else:
                todo.append(t)
        if results:
            self.progress.line(f"{len(results)} task(s) already tuned (use --force to tune them again)")
        try:
            for i, t in enumerate(todo):
                left = deadline - time.monotonic()
                if left <= 0:
                    for u in todo[i:]:
                        results.append(Result(u, entry_key(*self.key_of(u)), "partial",
                                              message="budget spent before this task"))
                    self.progress.line(f"budget spent: {len(todo) - i} task(s) left; run again to continue")
                    break
                share = left / (len(todo) - i)
                results.append(self.tune(t, time.monotonic() + share, i + 1, len(todo)))
        finally:
            self.progress.close()
        return results

    def tune(self, task: Task, deadline: float = math.inf, index: int = 1, count: int = 1) -> Result:
        dev, fld, op, b = self.key_of(task)
        key = entry_key(dev, fld, op, b)
        prior = None if self.force else self.entry_of(task)
        measured: dict[str, float] = dict((prior or {}).get("measured") or {})
        rejected: dict[str, str] = dict((prior or {}).get("rejected") or {})
        wl_cls = self.workloads.get(task.op)
        if wl_cls is None:
            return Result(task, key, "error", message=f"no workload for op {task.op!r}")
        try:
            wl: Workload = wl_cls(task)
            wl.reference()
            space = wl.space()
        except TrustedPathError as e:
            self.progress.line(f"[{index}/{count}] {task.label()}: {e}")
            return Result(task, key, "error", message=str(e))
        except (ValueError, TypeError, RuntimeError) as e:
            self.progress.line(f"[{index}/{count}] {task.label()}: cannot tune: {e}")
            return Result(task, key, "error", message=str(e))
        axes = list(space.axes)
        extra = self.extra.get(task.op)
        if extra:
            axes.append(Axis("extra", [dict(x) for x in extra]))
        total = 1 + sum(len(a.values) for a in axes)
        self.progress.start_task(index, count, f"{task.label()} on {dev}", total)
        base = dict(space.base)
        state = {"best": None, "best_t": math.inf, "done": 0, "complete": False, "total": total}
        default_id = canonical(base)

        def save():
            best = state["best"]
            if best is None:
                return
            entry = {"device": dev, "field": fld, "op": op, "bucket": b, "size": task.size, "batch": task.batch,
                     "config": clean(best), "time_s": state["best_t"],
                     "default_time_s": measured.get(default_id), "default_config": clean(base),
                     "complete": state["complete"], "candidates": total,
                     "measured": measured, "rejected": rejected}
            self.cache.put(entry)

        seen: set[str] = set()

        def evaluate(cfg: dict) -> float:
            cid = canonical(cfg)
            if cid in seen:            # the same configuration reached again (an axis's current value)
                state["total"] -= 1
                return measured.get(cid, math.inf)
            seen.add(cid)
            state["done"] += 1
            if cid in rejected:
                self.progress.candidate(state["done"], state["total"],
                                        f"{describe(cfg, base)}: rejected in an earlier run ({rejected[cid]})")
                return math.inf
            fresh = cid not in measured
            if not fresh:
                self.progress.candidate(state["done"], state["total"],
                                        f"{describe(cfg, base)}: {fmt_s(measured[cid])} (earlier run)")
            else:
                # a task given any time measures its default at least (its setup may have
                # spent a tiny share already): the entry it leaves is partial, not empty
                if state["done"] > 1 and time.monotonic() > deadline:
                    raise _OutOfTime
                t, reason = self.measure(wl, cfg)
                if reason is not None:
                    rejected[cid] = reason
                    self.progress.candidate(state["done"], state["total"], f"{describe(cfg, base)}: REJECTED ({reason})")
                    save()
                    return math.inf
                measured[cid] = t
                mark = " *" if t < state["best_t"] * (1 - self.min_gain) or state["best"] is None else ""
                self.progress.candidate(state["done"], state["total"], f"{describe(cfg, base)}: {fmt_s(t)}{mark}")
            t = measured[cid]
            # a new best must win by min_gain (timing noise must not pick the configuration)
            if t < state["best_t"] * (1 - self.min_gain) or state["best"] is None:
                state["best"], state["best_t"] = dict(cfg), t
            if fresh:
                save()
            return t

        try:
            evaluate(base)
            for axis in axes:
                start = dict(state["best"] if state["best"] is not None else base)
                for v in axis.values:
                    cand = axis.apply(start, v)
                    if space.valid is not None and not space.valid(cand):
                        state["total"] -= 1
                        continue
                    evaluate(cand)
            state["complete"] = True
            status = "tuned"
        except _OutOfTime:
            status = "partial"
        save()
        best = state["best"]
        res = Result(task, key, status if best is not None else "error", clean(best) if best else None,
                     state["best_t"] if best else None, measured.get(default_id), len(measured), dict(rejected))
        if best is None:
            res.message = "every candidate was rejected" if rejected else "no candidate measured"
            self.progress.end_task(f"no configuration: {res.message}")
        else:
            sp = res.speedup
            self.progress.end_task(
                f"{'best' if status == 'tuned' else 'best so far (budget spent; run again to resume)'}: "
                f"{describe(best, base)}: {fmt_s(res.time_s)}"
                + (f" (cost-model default {fmt_s(res.default_time_s)}, {sp:.2f}x)" if sp else "")
                + (f"; {len(rejected)} rejected" if rejected else ""))
        return res

    # -- one candidate -------------------------------------------------------------------------
    def measure(self, wl: Workload, cfg: dict) -> tuple[float | None, str | None]:
        """(median seconds, None) or (None, why rejected)."""
        try:
            wl.setup(cfg)
            out = wl.run(cfg)          # warm-up: compiles, fills caches
            wl.sync()
            reason = wl.check(out)
            if reason is not None:
                return None, reason
            del out
            times = []
            t_start = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                wl.run(cfg)
                wl.sync()
                times.append(time.perf_counter() - t0)
                spent = time.perf_counter() - t_start
                if len(times) >= self.max_runs or (len(times) >= self.min_runs and spent >= self.min_time):
                    break
            return statistics.median(times), None
        except KeyboardInterrupt:
            raise
        except Exception as e:  # noqa: BLE001 - a candidate that fails is a rejected candidate
            return None, f"error: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        finally:
            try:
                wl.teardown(cfg)
            except Exception:  # pragma: no cover
                pass


class _OutOfTime(Exception):
    pass
