"""The MSM front end: `msm`, `msm_prepare` (in `bases`), `msm_many`, `msm_plan`: argument
checks, config resolution, the sparse split of the scalars, then the CPU plan
(`plan`, `reduce`) or, on the Triton target, the device-resident program (`device`)."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace

import numpy as np
import torch

from ...config import config as zt_config, user as user_config
from .model import msm_config
from ...points import PointTensor
from ...runtime import counters
from ...tensor import FieldTensor

from . import device
from .bases import MSMBases, _weighted_table
from .model import MSMConfig, auto_strategy, check_window, choose_chunks, choose_window
from .plan import MSMPlan, _plan
from .reduce import _sums
from .scalars import scalar_words, split_scalars, window_widths


# -- the MSM ---------------------------------------------------------------------------------------


def msm(scalars, points, config: MSMConfig | None = None, stats: dict | None = None) -> PointTensor:
    """sum_i scalars[i]·points[i] as a 0-d PointTensor; (B, n) scalars give a (B,) PointTensor.

    points: a 1-D PointTensor (e.g. G.tensor(list of affine points)) or `MSMBases` from
    `msm_prepare`. scalars: a FieldTensor of the group's scalar field, or Python ints in
    [0, r) (a list, or a list of lists), or an `MSMPlan` of them (`msm_plan`) for prepared
    bases. `stats` (a dict) receives what was chosen (window,
    chunks, ...), the tree's level sizes and wall/CPU seconds per phase. Without `config`:
    prepared bases keep the config they were prepared with; otherwise zt.config(msm=...),
    else the tuning cache, else the cost model."""
    G = points.G if isinstance(points, (PointTensor, MSMBases)) else None
    dev = (points.device if isinstance(points, MSMBases) else
           points.device if isinstance(points, PointTensor) else torch.device("cpu"))
    cfg = config
    if cfg is None:
        if isinstance(points, MSMBases):
            cfg = _prepared_config(points, None)
        elif isinstance(points, PointTensor) and len(points.shape) == 1:
            cfg = msm_config(G, points.shape[0], dev, batch=_batch_of(scalars))
        else:
            cfg = MSMConfig()
    strategy = cfg.strategy or (auto_strategy(G, dev) if G is not None else None)
    if stats is not None:
        stats["strategy"] = strategy or "default"
    with _counted(stats), zt_config(strategy=strategy):
        if isinstance(scalars, MSMPlan):
            return _msm_planned(scalars, points, cfg, stats)
        return _msm(scalars, points, cfg, stats)


@contextmanager
def _counted(stats: dict | None):
    """stats["launches"], stats["syncs"] of the call (`runtime.counters`), where stats are asked."""
    if stats is None:
        yield
        return
    with counters.record() as c:
        yield
    stats.update(launches=c.launches, kernels=c.kernels, syncs=c.syncs)


def msm_many(jobs, bases: MSMBases, config: MSMConfig | None = None, stats: dict | None = None) -> PointTensor:
    """Several MSMs over slices of one set of prepared bases, summed by one bucket tree:
    jobs is a list of (scalars, offset), scalars[i] multiplying base offset + i (scalars as
    for `msm`, a vector each). Returns a (len(jobs),) PointTensor. The jobs share the
    digits, the sort, the tree's launches, the bucket reduction and the final combination,
    which for small MSMs are mostly fixed costs."""
    if not isinstance(bases, MSMBases):
        raise TypeError("msm_many takes MSMBases from msm_prepare")
    if not jobs:
        raise ValueError("msm_many: no jobs")
    GS = bases.G
    cfg = config or (msm_config(GS, bases.n, bases.device, prepared=True) if user_config("msm") else bases.config)
    if bases.device_points is not None:
        with _counted(stats):
            return _many_on_device(GS, jobs, bases, cfg, stats)
    word_jobs, seen = [], {}
    for j, (scalars, off) in enumerate(jobs):
        # jobs often share one scalar vector (Groth16's A, B1 and C: the witness): words once
        words = seen.get(id(scalars))
        if words is None:
            words = seen[id(scalars)] = scalar_words(GS, scalars)
        if words.shape[0] != 1:
            raise ValueError(f"msm_many: job {j}: scalars must be one vector")
        k = words.shape[1]
        if not 0 <= off <= bases.n - k:
            raise ValueError(f"msm_many: job {j}: {k} scalars from base {off} pass the {bases.n} bases")
        word_jobs.append((words[0], off))
    strategy = cfg.strategy or auto_strategy(GS, bases.device)
    if stats is not None:
        stats["strategy"] = strategy or "default"
    with _counted(stats), zt_config(strategy=strategy):
        return _with_bases(bases, word_jobs, cfg, stats)


def _many_on_device(GS, jobs, bases: MSMBases, cfg: MSMConfig, stats) -> PointTensor:
    """msm_many against resident bases as one device program: the jobs become the rows of
    a (len(jobs), span) matrix of standard-form scalar words over the bases they touch,
    zero outside each job's slice (a zero digit makes no entry), so the jobs share every
    launch but each FieldTensor job's conversion out of Montgomery form."""
    from ...kernels.field_programs import from_mont
    Fr, dev, sized = GS.Fr, bases.device, []
    for j, (scalars, off) in enumerate(jobs):
        if isinstance(scalars, FieldTensor):
            if scalars.F != Fr:
                raise ValueError(f"msm_many: job {j}: scalars must be {Fr.name} elements, got {scalars.F.name}")
            if len(scalars.shape) != 1:
                raise ValueError(f"msm_many: job {j}: scalars must be one vector")
            k, sc = scalars.shape[0], scalars
        else:
            sc = scalar_words(GS, scalars)
            if sc.shape[0] != 1:
                raise ValueError(f"msm_many: job {j}: scalars must be one vector")
            k = sc.shape[1]
        if not 0 <= off <= bases.n - k:
            raise ValueError(f"msm_many: job {j}: {k} scalars from base {off} pass the {bases.n} bases")
        sized.append((sc, off, k))
    spans = [(off, off + k) for _, off, k in sized if k]
    if not spans:                                           # every job empty
        return GS.identity((len(jobs),), device=dev)
    lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
    words = torch.zeros((Fr.limbs, len(jobs), hi - lo), dtype=torch.int32, device=dev)
    for j, (sc, off, k) in enumerate(sized):
        if k:                                               # ints are host data: uploaded once
            words[:, j, off - lo:off - lo + k] = from_mont(Fr, sc.data) if isinstance(sc, FieldTensor) else \
                torch.from_numpy(sc[0].view("<i4").T.copy()).to(dev)
    pts = bases.device_bases(lo, hi)
    # the weighted table's windows are whole copies of the bases, and the kept (P, phi(P))
    # is P's columns then phi(P)'s: jobs over a part of the bases make their own
    whole = (lo, hi) == (0, bases.n)
    weighted = bases.device_weighted if cfg.weighted and whole else None
    return device.device_msm(GS, words, pts, cfg, stats, weighted=weighted,
                             glv=bases.device_glv() if whole else None)


def msm_plan(scalars, *bases: MSMBases, config: MSMConfig | None = None,
             stats: dict | None = None) -> MSMPlan:
    """The scalar side of MSMs of `scalars` (as for `msm`) against each of `bases` (prepared,
    of one geometry: same number of bases, window, checkpoints, chunks and scalar field; G1
    and G2 bases may share a plan): signed digits, sort and bucket layout, made once, so that
    `msm(plan, b)` for each b skips them. A scalar 0, or one whose base is the identity in
    every given set, gets no entries; a base that is the identity in some sets only is
    summed as the identity there."""
    if not bases:
        raise ValueError("msm_plan: no bases")
    for b in bases:
        if not isinstance(b, MSMBases):
            raise TypeError("msm_plan takes MSMBases from msm_prepare")
    cfgs = [_prepared_config(b, config) for b in bases]
    keys = [plan_key(b, c) for b, c in zip(bases, cfgs)]
    for i, k in enumerate(keys[1:], 1):
        if k != keys[0]:
            raise ValueError(f"msm_plan: bases {i} ({bases[i].G.name}, {_describe(bases[i], cfgs[i])}) differ "
                             f"from bases 0 ({bases[0].G.name}, {_describe(bases[0], cfgs[0])}); a plan "
                             "needs one geometry")
    if bases[0].device_points is not None:         # the device program makes its own plan
        ns = scalars.shape[-1] if isinstance(scalars, FieldTensor) else scalar_words(bases[0].G, scalars).shape[1]
        if ns != bases[0].n:
            raise ValueError(f"msm_plan: {ns} scalars but {bases[0].n} bases")
        return MSMPlan(keys[0], None, False, _batch_of(scalars), bases[0].chunks, [], [], 1, 0,
                       squeeze=_is_vector(scalars), scalars=scalars)
    words = scalar_words(bases[0].G, scalars)
    Bt, ns, _ = words.shape
    if ns != bases[0].n:
        raise ValueError(f"msm_plan: {ns} scalars but {bases[0].n} bases")
    plan = _bases_plan(list(bases), [(words[b], 0) for b in range(Bt)], cfgs[0], stats)
    return replace(plan, squeeze=_is_vector(scalars))


def _prepared_config(bases: MSMBases, config: MSMConfig | None) -> MSMConfig:
    """`msm`'s config for prepared bases: the caller's, zt.config(msm=...), else the bases' own."""
    if config is not None:
        return config
    return msm_config(bases.G, bases.n, bases.device, prepared=True) if user_config("msm") else bases.config


def _describe(bases: MSMBases, cfg: MSMConfig) -> str:
    return (f"n={bases.n}, window={bases.window}, checkpoint={bases.M}, chunks={bases.chunks}, "
            f"offset={bool(cfg.offset)}, reduction={cfg.reduction}")


def _is_vector(scalars) -> bool:
    """Scalars given as one vector (msm returns one point), not a (B, n) batch."""
    if isinstance(scalars, FieldTensor):
        return len(scalars.shape) != 2
    return not (len(scalars) and isinstance(list(scalars)[0], (list, tuple)))


def _msm_planned(plan: MSMPlan, bases, cfg: MSMConfig, stats: dict | None) -> PointTensor:
    if not isinstance(bases, MSMBases):
        raise TypeError("msm(plan, bases): a plan from msm_plan runs against MSMBases")
    if plan.key != plan_key(bases, cfg):
        raise ValueError(f"msm: the plan was made for bases of another geometry than these "
                         f"({bases.G.name}, {_describe(bases, cfg)})")
    if plan.scalars is not None:
        return _msm(plan.scalars, bases, cfg, stats)
    res = _run(bases, plan, cfg, stats)
    return res[0] if plan.squeeze else res


def _with_bases(bases: MSMBases, word_jobs, cfg: MSMConfig, stats: dict | None) -> PointTensor:
    """The MSMs of scalar words (k, Lr) against bases offset .. offset + k of prepared bases,
    for each (words, offset) of word_jobs, in one bucket tree: a (len(word_jobs),) PointTensor."""
    return _run(bases, _bases_plan([bases], word_jobs, cfg, stats), cfg, stats)


def _bases_plan(sets: list, word_jobs, cfg: MSMConfig, stats: dict | None) -> MSMPlan:
    """The plan of word_jobs against prepared bases of one geometry: a scalar goes through
    the buckets unless it is 0 or its base is the identity in every set."""
    b0 = sets[0]
    base_inf = b0.base_inf.cpu().numpy()
    for b in sets[1:]:
        base_inf = base_inf & b.base_inf.cpu().numpy()
    js, n_ones, n_dense = [], 0, 0
    for words, off in word_jobs:
        live, ones = split_scalars(words[None], base_inf[off:off + len(words)], cfg.sparse)
        js.append((words[live[0]], off + np.flatnonzero(live[0])))
        n_ones, n_dense = n_ones + int(ones.sum()), n_dense + int((live & ~ones).sum())
    plan = _plan(js, b0.n, [b0.window] * b0.W, b0.M, b0.J, b0.chunks, b0.offset_total, cfg, b0.G.Fr,
                 stats)
    return replace(plan, key=plan_key(b0, cfg), ones=n_ones, dense=n_dense)


def plan_key(bases: MSMBases, config: MSMConfig | None = None) -> tuple:
    """What an `MSMPlan` for `bases` depends on besides the scalars, with `msm`'s config
    (config None: as `msm` resolves it): bases with equal keys share plans."""
    cfg = _prepared_config(bases, config)
    return (bases.G.r, bases.n, bases.window, bases.W, bases.M, bases.J, bases.chunks, bases.offset_total,
            bool(cfg.offset), cfg.reduction == "halving")


def _run(bases: MSMBases, plan: MSMPlan, cfg: MSMConfig, stats: dict | None) -> PointTensor:
    res = _sums(bases.G, bases.table, bases.tinf, plan, cfg, bases.device, stats, bases.rows)
    if stats is not None:
        stats.update(ones=plan.ones, dense=plan.dense)
    return res


def _on_device(GS, scalars: FieldTensor, points: PointTensor, cfg: MSMConfig, stats, weighted=None,
               glv=None) -> PointTensor:
    """The Triton target with scalars as a FieldTensor: they stay on the device (no words
    on the host). `weighted`, `glv`: the bases' kept tables (`device.device_msm`)."""
    if len(scalars.shape) not in (1, 2):
        raise ValueError("scalars must be a vector (n,) or a batch of vectors (B, n)")
    if scalars.shape[-1] != points.shape[0]:
        raise ValueError(f"msm: {scalars.shape[-1]} scalars but {points.shape[0]} points")
    res = device.device_msm(GS, scalars, points, cfg, stats, weighted=weighted, glv=glv)
    return res[0] if _is_vector(scalars) else res


def _batch_of(scalars) -> int:
    """Rows of a (B, n) batch of scalars (1 for a vector)."""
    if isinstance(scalars, FieldTensor):
        return scalars.shape[0] if len(scalars.shape) == 2 else 1
    if isinstance(scalars, (list, tuple)) and scalars and isinstance(scalars[0], (list, tuple)):
        return len(scalars)
    return 1


def _msm(scalars, points, cfg: MSMConfig, stats: dict | None) -> PointTensor:
    if isinstance(points, MSMBases):
        bases = points
        GS = bases.G
        n = bases.n
    elif isinstance(points, PointTensor):
        GS = points.G
        if len(points.shape) != 1:
            raise ValueError(f"bases must be a 1-D PointTensor, got shape {tuple(points.shape)}")
        n = points.shape[0]
        bases = None
    else:
        raise TypeError("msm(scalars, points): points must be a PointTensor (e.g. G.tensor(list)) "
                        "or MSMBases from msm_prepare")
    weighted = glv = None
    if bases is not None and bases.device_points is not None:
        weighted = bases.device_weighted if cfg.weighted else None
        glv = bases.device_glv()
        points, bases = bases.device_bases(), None
    if n and isinstance(scalars, FieldTensor) and device.on_device(points.device):
        return _on_device(GS, scalars, points, cfg, stats, weighted, glv)
    words = scalar_words(GS, scalars)
    Bt, ns, _ = words.shape
    if ns != n:
        raise ValueError(f"msm: {ns} scalars but {n} points")
    squeeze = _is_vector(scalars)
    dev = (bases.device if bases is not None else points.device)
    if bases is None and n and device.on_device(dev):      # Python ints: host data, uploaded once
        res = device.device_msm(GS, words, points, cfg, stats, weighted=weighted, glv=glv)
        return res[0] if squeeze else res
    if n == 0:
        res = GS.identity((Bt,), device=dev)
        return res[0] if squeeze else res
    if bases is not None:
        res = _with_bases(bases, [(words[b], 0) for b in range(Bt)], cfg, stats)
        return res[0] if squeeze else res
    from ...kernels.msm_tree import Clock
    clock = Clock(stats)
    xy, inf = points.affine()
    live, ones = split_scalars(words, inf.cpu().numpy(), cfg.sparse)
    bits = GS.r.bit_length()
    # the window for the scalars other than 0 and 1: with sparse scalars (witnesses: mostly
    # 0 and 1) the window for all n would give buckets that outnumber their entries
    many = int((live & ~ones).sum(axis=1).max())
    c = cfg.window or choose_window(max(many, 1), bits, batch=Bt, cfg=cfg)
    check_window(c)
    widths = window_widths(bits, c)
    c = max(widths)
    W = len(widths)
    N = 1 << (c - 1)
    K = min(cfg.chunks or choose_chunks(N), N)
    # point-major where compiled gathers read it (`msm_tree.take_cols`): faster than limb-major
    # in an in-process A/B
    from ...kernels import cpu_gather
    pm = dev.type == "cpu" and cpu_gather.available()
    table, tinf, total = _weighted_table(GS, xy, inf, c, W, 1, K, point_major=pm)
    clock.tick("table")
    # (all live, as dense scalars are: no masked copy of the words)
    jobs = [(words[b], np.arange(n, dtype=np.int64)) if live[b].all() else
            (words[b][live[b]], np.flatnonzero(live[b])) for b in range(Bt)]
    res = (_pippenger(GS, None, tinf, jobs, n, c, widths, W, 1, K, total, cfg, dev, stats, table) if pm else
           _pippenger(GS, table, tinf, jobs, n, c, widths, W, 1, K, total, cfg, dev, stats))
    if stats is not None:
        stats.update(ones=int(ones.sum()), dense=int((live & ~ones).sum()))
    return res[0] if squeeze else res


def _pippenger(GS, table, tinf, jobs, n, c, widths, M, J, K, offset_total, cfg, dev, stats,
               table_rows=None):
    """jobs: one (words (k, Lr), cols (k,)) per batch row: the scalars that go through the
    buckets (zeros and identity bases already left out: they get no digits) and the bases
    they multiply, as columns of the n-base table. Windows t = j·M + m (checkpoint j, round
    m); widths[t] bits each (uniform when J > 1, so that a round sits at the same offset in
    every checkpoint)."""
    plan = _plan(jobs, n, widths, M, J, K, offset_total, cfg, GS.Fr, stats)
    return _sums(GS, table, tinf, plan, cfg, dev, stats, table_rows)
