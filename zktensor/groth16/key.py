"""The resident proving key: a snarkjs .zkey read once, its MSM bases prepared on the device
and kept there, and the policy that decides how much memory those tables may take.

    key = ResidentKey("circuit.zkey", r1cs="circuit.r1cs")   # `Prover` is one, and proves
    key.memory_bytes(); key.load_times; key.checkpoints

The tables, by name: ``H`` (G1, against p's coset evaluations), ``B2`` (G2) and the G1
witness tables: for keys of up to ``MERGE_UPTO`` wires one table ``ab1c`` with the A, B1
and C sections side by side (one bucket tree sums all three: `ops.msm.msm_many`), for
larger keys one table each (``a``, ``b1``, ``c``). C's bases come after identity points
for the public wires, so every witness MSM takes the whole witness as scalars and they
can share one `msm_plan`.

Memory policy: GZKP's checkpoint interval M per table (`ops.msm.msm_prepare`). M = 1 keeps
2^(j·c)·P_i for every window j, so an MSM sums one bucket set with a wider window, at the
price of a longer load and more memory; `PLAIN` keeps the bases alone. `auto_checkpoints`
gives M = 1 to the sizes where it pays while the tables fit `memory_budget`.

Keys larger than the device: on the Triton target the tables are the key's points on the
device; when they exceed `device_table_budget` (``table_budget=`` bytes), the largest
stay in host memory (`host_bases.HostBases`: pinned, uploaded chunk by chunk for every
MSM on a copy stream, the chunks' partial sums added on the device).
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..ops.msm import MSMBases, MSMConfig, msm_prepare, plan_key, prepared_bytes, resident_bytes
from ..ops.msm import device as msm_device
from ..ops.msm.model import msm_config as msm_config_for
from ..points import PointTensor, cat as cat_points, group
from ..tensor import field
from .fixed_base import FixedBase
from .formats import FormatError, read_r1cs, read_zkey
from .formats.binfile import drop_pages
from .formats.consistency import check_r1cs_for_zkey
from .formats.r1cs import R1CS
from .formats.zkey import ZKey
from .host_bases import HostBases
from .r1cs_to_qap import R1CSCheck, coset_shift, zkey_matrices

PATH = (str, bytes, os.PathLike)


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


WITNESS_UNITS = ("a", "b1", "c", "B2")       # the witness MSMs: sum_i w_i·P_i over A, B1, C (G1), B2 (G2)
MERGE_UPTO = 1 << 14
"""Keys whose G1 witness MSMs have at most this many scalars sum all three in one bucket tree
(table ``ab1c``): for small keys the launches, sort, reduction and final combination that
one tree shares are most of an MSM's cost. Larger keys run them as three MSMs, which the
prover's graph schedules beside the G2 and H MSMs (a merged node would outlast them)."""
PLAN_SHARE_SLACK = 1.1  # `_plan_group`: a member of a shared plan sums at most this many times its live bases
PLAIN = 1 << 10         # a checkpoint interval past every window count: the bases alone
CONSOLIDATE_FROM, CONSOLIDATE_UPTO = 1 << 11, 1 << 18
"""Sections of this many bases get M = 1 by default: in that range the wider window saves
more per proof than the extra table reads cost (bench/results hold the measurements).
A one-shot CLI proof does not earn the longer load back (`cli` passes PLAIN);
`Prover(checkpoint=PLAIN)` opts out."""

def memory_budget(device) -> int:
    """Bytes the default checkpoints may spend on MSM tables: a quarter of the device's
    memory (on the CPU, of physical RAM), at most 8 GiB."""
    dev = torch.device(device)
    if dev.type == "cuda":
        total = torch.cuda.get_device_properties(dev).total_memory
    else:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min(total // 4, 8 << 30)


def device_table_budget(device) -> int | None:
    """Bytes the device graph's tables may take on `device` by default: half a GPU's memory
    (the rest is the MSMs' digits, sort and buckets and the POLY stage's tensors); None (no
    limit) for CPU tensors."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    return torch.cuda.get_device_properties(dev).total_memory // 2


def host_tables(sizes: dict, budget: int | None) -> tuple[set, int]:
    """(the tables to keep in host memory, points per uploaded chunk) for tables of
    {name: (device bytes, bytes a point)} and a device budget (None: all fit): the largest
    move to the host until the rest fits; each MSM over a host table holds two chunks on
    the device, and all of them may run at once, so the chunk is what the budget left
    over gives two buffers of each."""
    total = sum(b for b, _ in sizes.values())
    if budget is None or total <= budget:
        return set(), 0
    host, left = set(), total
    for name in sorted(sizes, key=lambda n: -sizes[n][0]):
        if left <= budget:
            break
        host.add(name)
        left -= sizes[name][0]
    room = max(0, budget - left)
    per_point = max(sizes[n][1] for n in host)
    return host, max(1, room // (2 * len(host) * per_point))


def auto_checkpoints(sections: dict, device, budget: int | None = None) -> dict[str, int]:
    """Checkpoint interval per table {name: (group, bases, scalars per MSM)}, in order of
    preference: M = 1 (every window's weighted bases) for MSMs of CONSOLIDATE_FROM to
    CONSOLIDATE_UPTO scalars while the tables fit the budget, PLAIN for the rest.
    Loading costs the doublings of every window's bases, which a one-shot CLI proof does
    not earn back (`cli` passes PLAIN)."""
    budget = memory_budget(device) if budget is None else budget
    out = {name: PLAIN for name in sections}
    spent = sum(prepared_bytes(G, n, PLAIN, n_hint=k) for G, n, k in sections.values() if n)
    for name, (G, n, k) in sections.items():
        if n and CONSOLIDATE_FROM <= k <= CONSOLIDATE_UPTO:
            extra = prepared_bytes(G, n, 1, n_hint=k) - prepared_bytes(G, n, PLAIN, n_hint=k)
            if spent + extra <= budget:
                out[name], spent = 1, spent + extra
    return out


class AfterIdentities:
    """A key section of bases for wires k.. (C: the private wires) after k identity points, so
    that its MSM takes the whole witness as scalars (the identities get no bucket entries) and
    shares the other witness MSMs' `msm_plan`."""

    def __init__(self, k: int, section):
        self.k, self.section, self.name = k, section, section.name

    def __len__(self):
        return self.k + len(self.section)

    def points(self, G, device) -> PointTensor:
        P = G.from_bytes(self.section.raw, device=device, check=True)
        return cat_points([G.identity((self.k,), device=device), P]) if self.k else P


@dataclass
class Bases:
    """Resident prepared bases of one or more key sections side by side (None: all empty):
    section i is bases offsets[i] .. offsets[i] + sizes[i]."""
    name: str
    sizes: tuple
    offsets: tuple
    prepared: object | None

def _offsets(sizes) -> tuple:
    return tuple(int(o) for o in np.cumsum((0,) + tuple(sizes)[:-1]))


class ResidentKey:
    """A proving key loaded once and kept resident on ``device``.

    zkey: a path or a ZKey. r1cs: a path or an R1CS for the witness check (`r1cs_to_qap.
    R1CSCheck`; optional). device: where the tables live (default: CUDA if present).
    msm_config: MSMConfig for the MSMs (window, chunks, ...; default: per table,
    zt.config(msm=...), else the tuning cache (`zktensor autotune`), else the cost model).
    checkpoint: the checkpoint interval M of every table (default: the MSM config's
    (tuned), else `auto_checkpoints`). verbose: print each load step's time. table_cache:
    map the tables from the on-disk cache, or prepare and store them there (`table_cache`;
    default: on unless ZKTENSOR_TABLE_CACHE=off; only for a key given as a path).
    ``tables_from`` says which ("mapped" or "built"); ``validated`` is what the cache entry
    records of the key's validation. table_budget: bytes the tables may take on the device
    on the Triton target (default `device_table_budget`); tables past it stay in host
    memory, uploaded in chunks (`host_tables`; ``self.host`` names them).
    """

    def __init__(self, zkey, *, r1cs=None, device=None, msm_config: MSMConfig | None = None,
                 checkpoint: int | None = None, verbose: bool = False, table_cache: bool | None = None,
                 table_budget: int | None = None):
        t0 = time.perf_counter()
        self.zkey: ZKey = read_zkey(zkey) if isinstance(zkey, PATH) else zkey
        z = self.zkey
        self.path = z.path
        self.curve = z.curve
        self.device = torch.device(device) if device is not None else default_device()
        self.F = field(f"{z.curve}.fr")
        self.G1 = group(f"{z.curve}.g1")
        self.G2 = group(f"{z.curve}.g2")
        self.n_vars, self.n_public, self.domain_size = z.n_vars, z.n_public, z.domain_size
        self.msm_config = msm_config or MSMConfig()
        self._checkpoint_given = checkpoint is not None
        self._tuned_msm = msm_config is None     # per-section configs: zt.config / tuning cache
        self.shift = coset_shift(self.F, z.domain_size)
        self.load_times: dict[str, float] = {}

        def timed(name, f):
            t = time.perf_counter()
            v = f()
            self.load_times[name] = time.perf_counter() - t
            if verbose:
                print(f"  load {name}: {1e3 * self.load_times[name]:.1f} ms")
            return v

        self.r1cs_check = None            # first: a .r1cs that does not match the key fails fast
        if r1cs is not None:
            self.r1cs_check = timed("r1cs", lambda: self._load_r1cs(r1cs))
        self.A_mat, self.B_mat = timed("coefs", lambda: zkey_matrices(z, self.device))
        self.bases = {}
        # the G1 witness sections: side by side in one table for one bucket tree, or apart
        merge = max(len(z.A), len(z.B1), len(z.C)) <= MERGE_UPTO
        self.witness_tables = ("ab1c",) if merge else ("a", "b1", "c")
        C = AfterIdentities(z.n_public + 1, z.C)      # C over all wires: its scalars are the witness's
        witness = ((("ab1c", (z.A, z.B1, C), self.G1),) if merge else
                   (("a", (z.A,), self.G1), ("b1", (z.B1,), self.G1), ("c", (C,), self.G1)))
        tables = (("B2", (z.B2,), self.G2), ("H", (z.H,), self.G1)) + witness
        if checkpoint is not None and checkpoint < 1:
            raise ValueError(f"checkpoint must be >= 1, got {checkpoint}")
        self.checkpoints = ({name: checkpoint for name, _, _ in tables} if checkpoint is not None else
                            auto_checkpoints({name: (G, sum(map(len, secs)), max(map(len, secs)))
                                              for name, secs, G in tables}, self.device))
        self.host, self.chunk = set(), 0
        if msm_device.on_device(self.device):
            sizes = {}          # a resident table's bytes as msm_prepare keeps it; a host table's point
            for name, secs, G in tables:
                m = sum(map(len, secs))
                sizes[name] = (resident_bytes(G, m, self._table_config(name, secs, G)[0]) if m else 0,
                               G.L * G.K * 4)
            budget = device_table_budget(self.device) if table_budget is None else table_budget
            self.host, self.chunk = host_tables(sizes, budget)
        self._load_tables(zkey if isinstance(zkey, PATH) else None, tables, timed, table_cache)
        d = self.device
        self.alpha_1 = self.G1.tensor(z.alpha_1, device=d)
        self.beta_1 = self.G1.tensor(z.beta_1, device=d)
        self.delta_1 = self.G1.tensor(z.delta_1, device=d)
        self.beta_2 = self.G2.tensor(z.beta_2, device=d)
        self.delta_2 = self.G2.tensor(z.delta_2, device=d)
        # fixed-base tables for the host graph's blinding terms (r·delta_1, s·alpha_1 + r·beta_1
        # + r·s·delta_1, s·delta_2); the device graph blinds by device MSMs instead
        # (`prover._device_nodes`), so there they are made only if a host-graph proof asks
        self._fixed_tables = {k: v for k, v in self._cached_fixed.items() if v is not None}
        if not msm_device.on_device(self.device):
            for name in ("fixed_1", "fixed_2"):
                if name not in self._fixed_tables:
                    timed(name.replace("_", "_g"), lambda name=name: getattr(self, name))
        if self._store is not None:
            timed("table_store", self._store)
        # the file was read into tables and matrices: its mapped pages leave the resident set
        drop_pages(getattr(z.H, "raw", None))
        self.load_s = time.perf_counter() - t0

    @property
    def fixed_1(self) -> FixedBase:
        """Fixed-base table of delta_1, alpha_1, beta_1 (the host graph's blinding)."""
        if "fixed_1" not in self._fixed_tables:
            self._fixed_tables["fixed_1"] = FixedBase(cat_points(
                [self.delta_1.reshape(1), self.alpha_1.reshape(1), self.beta_1.reshape(1)]))
        return self._fixed_tables["fixed_1"]

    @property
    def fixed_2(self) -> FixedBase:
        """Fixed-base table of delta_2 (the host graph's blinding)."""
        if "fixed_2" not in self._fixed_tables:
            self._fixed_tables["fixed_2"] = FixedBase(self.delta_2)
        return self._fixed_tables["fixed_2"]

    def _load_tables(self, path, tables, timed, use_cache) -> None:
        """The MSM tables: mapped from the on-disk table cache (`table_cache`) when the key came
        as a path whose tables are there, else prepared (and then stored there)."""
        from . import table_cache
        from .key_check import file_identity, is_current, remember, remembered
        self.tables_from, self.validated = "built", {}
        self._cached_fixed, self._store = {}, None
        cached = path is not None and (table_cache.enabled() if use_cache is None else use_cache)
        on_host = self.device.type == "cpu"
        digest = timed("zkey_sha256", lambda: table_cache.remembered_digest(path)) if cached and on_host else None
        # device tables are not cached (they are the key's points, uploaded): the validation is
        # remembered by itself, under the file's identity (a stat, where a sha256 of a 2^20
        # key's ~500 MB would cost about what a GPU's validation does)
        ident = file_identity(path) if cached and not on_host else None

        def validate():        # once per key content: the stamp travels with the cached tables
            if ident is not None:
                self.validated["zkey_check"] = remembered(ident)
            if not is_current(self.validated.get("zkey_check")):
                # on the key's device: a GPU prover needs no CPU kernel (the points were
                # decoded with check=True, so the subgroup tests remain)
                self.validated["zkey_check"] = timed("validate", lambda: _validate(
                    self.zkey, on_curve_checked=True, device=self.device, chunk=self.chunk or None))
                if ident is not None:
                    remember(ident, self.validated["zkey_check"])
        specs = {name: self._table_spec(name, secs, G) for name, secs, G in tables}
        if digest is not None and on_host and not self.host:
            got = timed("table_cache", lambda: table_cache.load(digest, specs, self.device))
            if got is not None:
                prepared, self.validated = got
                self._cached_fixed = {k: prepared[k] for k in ("fixed_1", "fixed_2") if k in prepared}
                for name, secs, _ in tables:
                    sizes = tuple(len(sec) for sec in secs)
                    self.bases[name] = Bases(name, sizes, _offsets(sizes), prepared[name])
                self.tables_from = "mapped"
                validate()
                return
        storing = digest is not None and on_host and not self.host
        # the one slow start of a key: said, as a cold compile is
        announced = table_cache.announce_build(path) if storing else None
        for name, secs, G in tables:
            self.bases[name] = timed(f"bases_{name}", lambda secs=secs, G=G, name=name: self._prepare(name, secs, G))
        validate()
        if storing:     # once the fixed-base tables are made too

            def store():
                where = table_cache.store(
                    digest, specs, {**{n: b.prepared for n, b in self.bases.items()},
                                    "fixed_1": self._fixed_tables.get("fixed_1"),
                                    "fixed_2": self._fixed_tables.get("fixed_2")}, self.device, self.validated)
                announced(where is not None)
                return where
            self._store = store

    def _table_spec(self, name, secs, G) -> dict:
        """What a table depends on besides the key's bytes (the table cache's key)."""
        cfg, checkpoint = self._table_config(name, secs, G)
        return {"group": G.name, "sizes": [len(sec) for sec in secs], "config": asdict(cfg),
                "checkpoint": checkpoint}

    def _table_config(self, name, secs, G):
        k = max(len(sec) for sec in secs)          # scalars an MSM: the window is chosen for those
        cfg = msm_config_for(G, k, self.device, prepared=True) if self._tuned_msm else self.msm_config
        checkpoint = self.checkpoints[name] if cfg.checkpoint is None or self._checkpoint_given else cfg.checkpoint
        return cfg, checkpoint

    def _prepare(self, name, secs, G) -> Bases:
        sizes = tuple(len(sec) for sec in secs)
        offsets = _offsets(sizes)
        if not sum(sizes):
            return Bases(name, sizes, offsets, None)
        if name in self.host:
            try:
                return Bases(name, sizes, offsets, HostBases.decode(
                    G, [(sec.section.raw, sec.k) if isinstance(sec, AfterIdentities) else (sec.raw, 0)
                        for sec in secs], self.device, self.chunk))
            except ValueError as e:
                raise FormatError(f"{self.path}: {name}: {e}") from None
        parts = []
        for sec in secs:
            try:
                parts.append(sec.points(G, self.device) if isinstance(sec, AfterIdentities) else
                             G.from_bytes(sec.raw, device=self.device, check=True))
            except ValueError as e:
                raise FormatError(f"{self.path}: {sec.name}: {e}") from None
        P = parts[0] if len(parts) == 1 else cat_points(parts)
        cfg, checkpoint = self._table_config(name, secs, G)
        return Bases(name, sizes, offsets, msm_prepare(P, checkpoint=checkpoint, config=cfg, n_hint=max(sizes)))

    @property
    def shared_plan(self) -> tuple:
        """The witness MSMs (A, B1, C in G1, B2 in G2; C's bases after identities for the
        public wires) whose bases have one geometry under the config a proof would run
        with now: one `msm_plan` (digits, sort, bucket layout) serves them all, where each
        made its own."""
        return self._plan_group([t for t in WITNESS_UNITS if t in self.bases])

    def _plan_group(self, names) -> tuple:
        """The tables among `names` (with bases) that share the first one's plan geometry
        and whose live bases (not the identity) are nearly the same set, if more than one
        does; else (). A shared plan gives every scalar whose base is live in any member an
        entry in each member (`msm_plan`), so a member whose bases are mostly the identity
        would sum the others' live bases as identities: B1 and B2 of a circuit whose wires
        are mostly absent from the B matrix took longer in a shared plan than in plans of
        their own (the commit that made this rule). The member with
        the fewest live bases leaves while the union's live count passes PLAN_SHARE_SLACK
        times its own."""
        cfg = self._msm_cfg()
        names = [t for t in names if isinstance(self.bases[t].prepared, MSMBases)]
        if not names:
            return ()
        key = plan_key(self.bases[names[0]].prepared, cfg)
        group = tuple(t for t in names if plan_key(self.bases[t].prepared, cfg) == key)
        group = self._live_group(group, PLAN_SHARE_SLACK)
        return group if len(group) > 1 else ()

    def _live_group(self, group: tuple, slack: float) -> tuple:
        """`group` less the members that leave by `_plan_group`'s live-base rule; the masks
        never change, so each (group, slack) is worked out once (every proof builds a graph
        that asks)."""
        memo = self._live_groups
        if (group, slack) not in memo:
            live, left = self._live_bases, list(group)
            while len(left) > 1:
                union = int(np.logical_or.reduce([live[t] for t in left]).sum())
                fewest = min(left, key=lambda t: self._live_counts[t])
                if self._live_counts[fewest] * slack >= union:
                    break
                left.remove(fewest)
            memo[(group, slack)] = tuple(left)
        return memo[(group, slack)]

    @functools.cached_property
    def _live_groups(self) -> dict:
        return {}

    @functools.cached_property
    def _live_bases(self) -> dict:
        """{table: bool mask of its bases that are not the identity}, read once. The device
        program keeps no host mask (its plan is its own, `msm_plan`): all count as live."""
        out = {}
        for name, B in self.bases.items():
            b = B.prepared
            if isinstance(b, MSMBases):
                out[name] = (np.ones(b.n, dtype=bool) if b.base_inf is None else
                             ~b.base_inf.cpu().numpy().astype(bool))
        return out

    @functools.cached_property
    def _live_counts(self) -> dict:
        return {name: int(mask.sum()) for name, mask in self._live_bases.items()}

    def _msm_cfg(self) -> MSMConfig | None:
        return None if self._tuned_msm else self.msm_config

    def _group(self, unit: str):
        return self.G2 if unit == "B2" else self.G1

    def _load_r1cs(self, r1cs):
        rc = read_r1cs(r1cs) if isinstance(r1cs, PATH) else r1cs
        if not isinstance(rc, R1CS):
            raise TypeError("r1cs must be a path or an R1CS")
        check_r1cs_for_zkey(self.zkey, rc)
        return R1CSCheck(rc, self.device)

    def memory_bytes(self) -> int:
        """Bytes of the resident key material (MSM tables and coefficients)."""
        n = sum(b.prepared.memory_bytes() for b in self.bases.values() if b.prepared is not None)
        for M in (self.A_mat, self.B_mat):
            n += M.coef.numel() * 4 + (M.cols.numel() + M.row_ptr.numel()) * 8
        return n


__all__ = ["ResidentKey", "auto_checkpoints", "memory_budget", "device_table_budget", "host_tables",
           "default_device", "PLAIN", "MERGE_UPTO",
           "CONSOLIDATE_FROM", "CONSOLIDATE_UPTO", "WITNESS_UNITS"]


def _validate(zkey, **kw):
    """validate_zkey, except in a compile pass (runtime/compile_shards.py): its points are
    zeros, so the checks' kernels run and their verdict is dropped."""
    from ..runtime import compile_shards
    from .key_check import validate_zkey
    try:
        return validate_zkey(zkey, **kw)
    except FormatError:
        if compile_shards.active():
            return None
        raise
