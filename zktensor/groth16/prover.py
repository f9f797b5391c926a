"""The Groth16 prover over snarkjs proving keys: a graph of POLY and MSM nodes.

    prover = zt.groth16.Prover("circuit.zkey", r1cs="circuit.r1cs")   # key loaded once, resident
    proof, public = prover.prove("witness.wtns")                      # as many witnesses as you like
    prover.prove_to_files("w.wtns", "proof.json", "public.json", profile=True)
    print(prover.last_run.table())                                    # time and memory per node

The graph (``Prover.graph()``; names as in the profile; * = critical path):

    w_std ─┬─ check (the .r1cs, when given; runs first) ──────────────────────────────┐
           ├─ Aw* ─┬─ Cw* = Aw∘Bw ─ intt_abc* ─ coset_ntt_abc* ─ join_abc* ─ msm_h* ──┤
           ├─ Bw* ─┘   (POLY, then the H-MSM: the critical path)                       │
           └─ scalars ─ msm_plan ─┬─ msm_a, msm_b1, msm_c (G1) ─ blind_ab: s·A + r·B1 ├─ assemble*
                (or msm_ab1c: the     │                                                  │
                 three in one tree)   └─ msm_b2 (G2)     the witness MSMs, beside POLY   │
    blinding: r, s and r·delta_1, s·alpha_1 + r·beta_1 + r·s·delta_1, s·delta_2 ──────┘

``Aw``, ``Bw`` are the sparse products with the zkey's coefficient section; the
three evaluations go through one batched inverse NTT and one batched coset NTT
(``r1cs_to_qap`` explains snarkjs's coset and why p = a·b − c needs no division
by Z); ``msm_h`` takes p against the H points. The witness MSMs all take the whole
witness as scalars (C's bases, for the private wires, come after identity points for
the public ones), so ``msm_plan`` makes their digits, sort and bucket layout once
(`ops.msm.msm_plan`) for msm_a, msm_b1, msm_c and msm_b2. For keys of up to ``MERGE_UPTO`` wires
the three G1 witness MSMs (A, B1 and C) are one node instead,
``msm_ab1c``: one bucket tree over the three sections' bases side by side
(`ops.msm.msm_many`), so they share its launches, sort, reduction and final combination,
which are most of a small MSM's cost. The MSM bases are prepared once, when the Prover is
made, and stay on its device.

The blinding follows snarkjs's ``groth16_prove.js``, with r, s drawn from
``secrets`` (a CSPRNG) for every proof:

    pi_a = alpha_1 + Σ w_i·A_i + r·delta_1
    pi_b = beta_2 + Σ w_i·B2_i + s·delta_2
    b1   = beta_1 + Σ w_i·B1_i + s·delta_1
    pi_c = Σ_private w_i·C_i + Σ p_j·H_j + s·pi_a + r·b1 − r·s·delta_1

pi_c is computed expanded, C + H + s·A + r·B1 + (s·alpha_1 + r·beta_1 + r·s·delta_1),
so the terms that need no MSM (node ``blinding``) run at the start beside everything
else, and only s·A + r·B1 waits for the witness MSMs.

Witness safety: the witness must be over the key's field, have nVars values and
w[0] = 1; with a ``.r1cs`` (``r1cs=``) it is checked against every constraint
(node ``check``, which runs first) and refused with the index of the first
failing one (``WitnessError``), and no proof is returned. The zkey alone cannot
name a failing constraint (it holds no C matrix, and snarkjs's C·w := A·w ∘ B·w
hides a violation from the POLY stage); without a ``.r1cs`` the finished proof is
verified with the pairing verifier instead and a bad witness refused without an
index. ``prove(check=False)`` skips both (as snarkjs and rapidsnark do).
"""
from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..ops.elementwise import to_mont
from ..config import msm_config as msm_config_for
from ..ops.msm import MSMConfig, msm, msm_many, msm_plan, msm_prepare, plan_key
from ..ops.ntt import intt, ntt
from ..points import PointTensor, cat as cat_points, group
from ..tensor import FieldTensor, field, stack
from .formats import FormatError, read_r1cs, read_wtns, read_zkey
from .formats.consistency import check_r1cs_for_zkey, check_witness_for_zkey
from .formats.json_io import Proof, write_proof, write_public
from .formats.wtns import Wtns
from .formats.zkey import ZKey
from .fixed_base import FixedBase
from .graph import Graph, RunResult
from .r1cs_to_qap import R1CSCheck, WitnessError, coset_shift, join_abc, words_to_limbs, zkey_matrices

PATH = (str, bytes, os.PathLike)


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


PREFERENCE = ("B2", "H", "ab1c", "a", "b1", "c")   # the longest MSM first, then the critical path's
MERGE_UPTO = 1 << 14
"""Keys whose G1 witness MSMs have at most this many scalars sum all three in one bucket tree
(node ``msm_ab1c``); larger ones run them as three nodes (``msm_a``, ``msm_b1``, ``msm_c``)
beside the G2 and H MSMs. Diagnostic whole proofs (2 workers, interleaved processes): the
2^12 bench key 0.25-0.29 s merged against 0.34-0.40 s, 2^14 0.43-0.57 s against 0.52-0.66 s;
at 2^16 the merged node (1.07 s) outlasted everything beside it: 1.13-1.62 s against
1.09-1.22 s."""
PLAIN = 1 << 10         # a checkpoint interval past every window count: the bases alone
CONSOLIDATE_FROM, CONSOLIDATE_UPTO = 1 << 12, 1 << 18
"""Sections of this many bases get M = 1 by default. Diagnostic MSMs (2-core VM,
interleaved, dense scalars, M = 1 against plain, one thread unless said): BN254 G1 2^12
57-62 ms against 62-66, 2^13 70-88 against 81-106, 2^14 110-112 against 118-124, 2^15
151-173 against 189-207, 2^16 191-196 against 242-276 (two threads 150-187 against
225-244), 2^17 two threads 325-365 against 401-418; BN254 G2 2^13 83-88 against 105-112,
2^14 160-167 against 202-217, 2^15 271-276 against 316-356, 2^16 377-436 against 490-532.
Whole proofs, 2 threads: the 2^16 bench circuit 0.89-0.99 s against 1.01-1.06 s. At 2^18
M = 1 did not pay while windows stopped at 16 bits (a uint16 radix sort) and numpy
gathered the entries; with the counting sort (window 17) and `cpu_gather`, the 2^18 bench
proof takes 1.83-2.05 s against 2.11-2.26 s plain (2026-11-22, separate processes), for a
25 s key load against 2 s and 4.0 GiB resident against 1.15 GiB. A one-shot CLI proof
does not earn the load back (`cli` passes PLAIN); `Prover(checkpoint=PLAIN)` opts out."""


def memory_budget(device) -> int:
    """Bytes the default checkpoints may spend on MSM tables: a quarter of the device's
    memory (on the CPU, of physical RAM), at most 8 GiB."""
    dev = torch.device(device)
    if dev.type == "cuda":
        total = torch.cuda.get_device_properties(dev).total_memory
    else:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return min(total // 4, 8 << 30)


def auto_checkpoints(sections: dict, device, budget: int | None = None) -> dict[str, int]:
    """Checkpoint interval per table {name: (group, bases, scalars per MSM)}, in order of
    preference: M = 1 (every window's weighted bases) for MSMs of CONSOLIDATE_FROM to
    CONSOLIDATE_UPTO scalars while the tables fit the budget, PLAIN for the rest.
    Loading costs the doublings: 2^16 BN254 G1 bases at M = 1 take ~1.5 s (2 threads,
    130 MiB), and the whole 2^16 bench key 10.7 s (745 MiB) against 0.7 s (52 MiB) plain;
    a one-shot CLI proof does not earn that back (`cli` passes PLAIN)."""
    from ..ops.msm import prepared_bytes
    budget = memory_budget(device) if budget is None else budget
    out = {name: PLAIN for name in sections}
    spent = sum(prepared_bytes(G, n, PLAIN, n_hint=k) for G, n, k in sections.values() if n)
    for name, (G, n, k) in sections.items():
        if n and CONSOLIDATE_FROM <= k <= CONSOLIDATE_UPTO:
            extra = prepared_bytes(G, n, 1, n_hint=k) - prepared_bytes(G, n, PLAIN, n_hint=k)
            if spent + extra <= budget:
                out[name], spent = 1, spent + extra
    return out


def _abc(outs) -> tuple:
    """(A, B1, C) from the witness MSM nodes' outputs, in order (one (3,) or three (1,))."""
    pts = [p[i] for p in outs for i in range(p.shape[0])]
    return tuple(pts)


class _AfterIdentities:
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
class _Bases:
    """Resident prepared bases of one or more key sections side by side (None: all empty):
    section i is bases offsets[i] .. offsets[i] + sizes[i]."""
    name: str
    sizes: tuple
    offsets: tuple
    prepared: object | None


class Prover:
    """A proving key loaded once and kept resident; ``prove`` takes witnesses.

    zkey: a path or a ZKey. r1cs: a path or an R1CS for the witness check (optional,
    see the module docstring). device: where keys and work live (default: CUDA if
    present). msm_config: MSMConfig for the MSMs (window, chunks, ...; default: per key
    section, zt.config(msm=...), else the tuning cache (`zktensor autotune`), else the cost
    model). checkpoint: GZKP's checkpoint interval M for every section's bases
    (`ops.msm.msm_prepare`): 1 keeps 2^(j·c)·P_i for every window j, so each MSM sums one
    bucket set with a wider window; `PLAIN` keeps the bases alone. Default: the MSM config's
    (tuned), else `auto_checkpoints`. workers: scheduler threads (default: one per lane on
    a GPU, the CPU count (at most 4) on a CPU). verbose: print each load step's time.
    """

    def __init__(self, zkey, *, r1cs=None, device=None, msm_config: MSMConfig | None = None,
                 checkpoint: int | None = None, workers: int | None = None, verbose: bool = False):
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
        self.workers = workers
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
        C = _AfterIdentities(z.n_public + 1, z.C)     # C over all wires: its scalars are the witness's
        witness = ((("ab1c", (z.A, z.B1, C), self.G1),) if merge else
                   (("a", (z.A,), self.G1), ("b1", (z.B1,), self.G1), ("c", (C,), self.G1)))
        tables = (("B2", (z.B2,), self.G2), ("H", (z.H,), self.G1)) + witness
        if checkpoint is not None and checkpoint < 1:
            raise ValueError(f"checkpoint must be >= 1, got {checkpoint}")
        self.checkpoints = ({name: checkpoint for name, _, _ in tables} if checkpoint is not None else
                            auto_checkpoints({name: (G, sum(map(len, secs)), max(map(len, secs)))
                                              for name, secs, G in tables}, self.device))
        for name, secs, G in tables:
            self.bases[name] = timed(f"bases_{name}", lambda secs=secs, G=G, name=name: self._prepare(name, secs, G))
        d = self.device
        self.alpha_1 = self.G1.tensor(z.alpha_1, device=d)
        self.beta_1 = self.G1.tensor(z.beta_1, device=d)
        self.delta_1 = self.G1.tensor(z.delta_1, device=d)
        self.beta_2 = self.G2.tensor(z.beta_2, device=d)
        self.delta_2 = self.G2.tensor(z.delta_2, device=d)
        # fixed-base tables for the blinding terms (r·delta_1, s·alpha_1 + r·beta_1 + r·s·delta_1, s·delta_2)
        self.fixed_1 = timed("fixed_g1", lambda: FixedBase(cat_points(
            [self.delta_1.reshape(1), self.alpha_1.reshape(1), self.beta_1.reshape(1)])))
        self.fixed_2 = timed("fixed_g2", lambda: FixedBase(self.delta_2))
        self.load_s = time.perf_counter() - t0
        self.last_run: RunResult | None = None

    # -- loading ---------------------------------------------------------------------
    def _prepare(self, name, secs, G) -> _Bases:
        sizes = tuple(len(sec) for sec in secs)
        offsets = tuple(int(o) for o in np.cumsum((0,) + sizes[:-1]))
        if not sum(sizes):
            return _Bases(name, sizes, offsets, None)
        parts = []
        for sec in secs:
            try:
                parts.append(sec.points(G, self.device) if isinstance(sec, _AfterIdentities) else
                             G.from_bytes(sec.raw, device=self.device, check=True))
            except ValueError as e:
                raise FormatError(f"{self.path}: {sec.name}: {e}") from None
        P = parts[0] if len(parts) == 1 else cat_points(parts)
        k = max(sizes)          # scalars an MSM: the window is chosen for those
        cfg = msm_config_for(G, k, self.device, prepared=True) if self._tuned_msm else self.msm_config
        checkpoint = self.checkpoints[name] if cfg.checkpoint is None or self._checkpoint_given else cfg.checkpoint
        return _Bases(name, sizes, offsets, msm_prepare(P, checkpoint=checkpoint, config=cfg, n_hint=k))

    @property
    def shared_plan(self) -> tuple:
        """The witness MSMs (A, B1, C in G1, B2 in G2; C's bases after identities for the
        public wires) whose bases have one geometry under the config a proof would run
        with now: one `msm_plan` (digits, sort, bucket layout) serves them all, where each
        made its own (~0.1 s of work each at 2^18 wires on one core)."""
        cfg = None if self._tuned_msm else self.msm_config
        names = [t for t in ("a", "b1", "c", "B2") if t in self.bases and self.bases[t].prepared is not None]
        if not names:
            return ()
        key = plan_key(self.bases[names[0]].prepared, cfg)
        group = tuple(t for t in names if plan_key(self.bases[t].prepared, cfg) == key)
        return group if len(group) > 1 else ()

    def _load_r1cs(self, r1cs):
        from .formats.r1cs import R1CS
        rc = read_r1cs(r1cs) if isinstance(r1cs, PATH) else r1cs
        if not isinstance(rc, R1CS):
            raise TypeError("r1cs must be a path or an R1CS")
        check_r1cs_for_zkey(self.zkey, rc)
        return R1CSCheck(rc, self.device)

    def memory_bytes(self) -> int:
        """Bytes of the resident key material (MSM tables and coefficients)."""
        n = sum(b.prepared.memory_bytes() for b in self.bases.values() if b.prepared is not None)
        for M in (self.A_mat, self.B_mat):
            n += M.coef.numel() * 4 + M.cols.numel() * 8
        return n

    # -- witnesses -------------------------------------------------------------------
    def witness_words(self, witness) -> tuple[np.ndarray, str]:
        """(n_vars, L) standard-form uint32 words of a witness given as a path, a Wtns,
        or a sequence of ints; checked against the key (field, length, w[0] = 1)."""
        r, L = self.F.p, self.F.limbs
        if isinstance(witness, PATH):
            witness = read_wtns(witness)
        if isinstance(witness, Wtns):
            check_witness_for_zkey(self.zkey, witness)
            words, where = np.asarray(witness.words), witness.path
            if witness.n8 != 4 * L:
                raise FormatError(f"{witness.path}: {witness.n8}-byte values, expected {4 * L}")
        else:
            vals = list(witness)
            if len(vals) != self.n_vars:
                raise WitnessError(f"the witness has {len(vals)} values, the key's circuit {self.n_vars} wires")
            for i, v in enumerate(vals):
                if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= int(v) < r:
                    raise WitnessError(f"witness value {i} is not an integer in [0, r)")
            raw = b"".join(int(v).to_bytes(4 * L, "little") for v in vals)
            words, where = np.frombuffer(raw, dtype="<u4").reshape(-1, L), "witness"
        one = np.zeros(L, dtype=np.uint32)
        one[0] = 1
        if not np.array_equal(words[0], one):
            raise WitnessError(f"{where}: w[0] must be 1 (the constant wire), got "
                               f"{int.from_bytes(words[0].astype('<u4').tobytes(), 'little')}")
        return words, where

    # -- the graph -------------------------------------------------------------------
    def graph(self, check: bool = True, where: str = "witness") -> Graph:
        """The prover's graph; its only input is ``w_std``, the witness as (L, n_vars) limbs."""
        F, g = self.F, Graph("groth16_prove")
        B = self.bases
        P = dict(lane="poly", critical=True, kind="poly")
        g.add("Aw", lambda w: self.A_mat.matvec(w), ["w_std"], **P)
        g.add("Bw", lambda w: self.B_mat.matvec(w), ["w_std"], **P)
        g.add("Cw", lambda a, b: a * b, ["Aw", "Bw"], **P)
        g.add("intt_abc", lambda a, b, c: intt(stack([a, b, c])), ["Aw", "Bw", "Cw"], **P)
        g.add("coset_ntt_abc", lambda x: ntt(x, coset=self.shift), ["intt_abc"], **P)
        g.add("join_abc", join_abc, ["coset_ntt_abc"], **P)
        g.add("msm_h", lambda p: self._msm(B["H"], p, self.G1), ["join_abc"], lane="poly", critical=True,
              kind="msm")
        g.add("scalars", lambda w: FieldTensor(F, to_mont(F, w)), ["w_std"], lane="g1", kind="poly")
        # the G1 witness MSMs A, B1 and C, one node per table (each section's scalars: the witness)
        wit = [f"msm_{t}" for t in self.witness_tables]
        shared = self.shared_plan
        cfg = None if self._tuned_msm else self.msm_config
        if shared:
            # digits, sort and bucket layout once for the MSMs that share the witness as scalars
            g.add("msm_plan", lambda s: msm_plan(s.contiguous(), *(B[t].prepared for t in shared), config=cfg),
                  ["scalars"], lane="g1", kind="msm", priority=1)
        for t in self.witness_tables:
            if t in shared:
                g.add(f"msm_{t}", lambda p, t=t: msm(p, B[t].prepared, config=cfg).reshape(1), ["msm_plan"],
                      lane="g1", kind="msm")
            else:
                g.add(f"msm_{t}", lambda s, t=t: self._msm_many(B[t], [s] * len(B[t].sizes), self.G1),
                      ["scalars"], lane="g1", kind="msm")
        # the G2 MSM is the longest side node (2.7 s against ~1.1 s for each G1 one at 2^18 on
        # 2 CPU workers): started first, the G1 MSMs fill in around it (longest first)
        if "B2" in shared:
            g.add("msm_b2", lambda p: msm(p, B["B2"].prepared, config=cfg), ["msm_plan"], lane="g2",
                  kind="msm", priority=1)
        else:
            g.add("msm_b2", lambda s: self._msm(B["B2"], s, self.G2), ["scalars"], lane="g2", kind="msm",
                  priority=1)
        # short (5-30 ms) and needed only at the end, but left to the end by its rank it was
        # the proof's tail at 2^16 (both workers busy until the last MSM): run early instead
        g.add("blinding", self._blinding, [], lane="blind", kind="msm", priority=1)
        k = len(wit)
        g.add("blind_ab", lambda *v: self._blind_ab(*_abc(v[:k])[:2], v[k]), wit + ["blinding"], lane="g1",
              kind="msm")
        ins = wit + ["msm_b2", "msm_h", "blind_ab", "blinding"]
        if check and self.r1cs_check is not None:
            g.add("check", lambda w: self.r1cs_check.check(w, where), ["w_std"], lane="check",
                  kind="check", priority=10)
            ins.append("check")
        def assemble(*v):
            A, _, C = _abc(v[:k])
            b2, h, ab, bl = v[k:k + 4]
            return self._assemble(A, b2, C, h, ab, bl)
        g.add("assemble", assemble, ins, lane="poly", critical=True, kind="msm")
        return g

    def _msm(self, bases: _Bases, scalars: FieldTensor, G) -> PointTensor:
        if bases.prepared is None:
            return G.identity(device=self.device)
        return msm(scalars.contiguous(), bases.prepared, config=None if self._tuned_msm else self.msm_config)

    def _msm_many(self, bases: _Bases, scalars: list, G) -> PointTensor:
        """The MSMs of scalars[i] against section i of the bases, one bucket tree."""
        if bases.prepared is None:
            return G.identity((len(scalars),), device=self.device)
        jobs = [(s.contiguous(), off) for s, off in zip(scalars, bases.offsets)]
        return msm_many(jobs, bases.prepared, config=None if self._tuned_msm else self.msm_config)

    def _blinding(self) -> dict:
        """r, s from the CSPRNG and the blinding terms that need no MSM result:
        r·delta_1, s·alpha_1 + r·beta_1 + r·s·delta_1 (G1) and s·delta_2 (G2)."""
        q = self.F.p
        r = secrets.randbelow(q - 1) + 1
        s = secrets.randbelow(q - 1) + 1
        g1 = self.fixed_1.combine([[r, 0, 0], [r * s % q, s, r]])
        return {"r": r, "s": s, "r_delta_1": g1[0], "c_fixed": g1[1], "s_delta_2": self.fixed_2(s)}

    def _blind_ab(self, A, B1, bl) -> PointTensor:
        """s·(Σ w_i·A_i) + r·(Σ w_i·B1_i), the blinding terms of pi_c that need the MSMs: two
        points, so on Python ints (Straus, `algebra.curves.lincomb`), where the tensor
        double-and-add was ~250 launches: 21-85 ms at the end of a 2^16 proof on the 2-core VM."""
        from ..algebra.curves import lincomb
        a, b1 = cat_points([A.reshape(1), B1.reshape(1)]).to_affine()
        return self.G1.tensor(lincomb(self.G1.params, None, [(bl["s"], a), (bl["r"], b1)]), device=self.device)

    def _assemble(self, A, B2, C, H, ab, bl):
        """snarkjs's pi_c = C + H + s·pi_a + r·b1 − r·s·delta_1 with pi_a = A + alpha_1 + r·delta_1
        and b1 = B1 + beta_1 + s·delta_1, expanded: C + H + s·A + r·B1 + (s·alpha_1 + r·beta_1
        + r·s·delta_1)."""
        pi_a = A + self.alpha_1 + bl["r_delta_1"]
        pi_b = B2 + self.beta_2 + bl["s_delta_2"]
        pi_c = C + H + ab + bl["c_fixed"]
        return pi_a.to_affine(), pi_b.to_affine(), pi_c.to_affine()

    # -- proving ---------------------------------------------------------------------
    def prove(self, witness, *, check: bool = True, verify: bool | None = None, profile: bool = False,
              workers: int | None = None) -> tuple[Proof, list[int]]:
        """A proof and the public signals for one witness (a .wtns path, a Wtns or ints).

        check: refuse a witness that does not satisfy the circuit. With the .r1cs given to
        the Prover, every constraint is checked before the proof is assembled and the
        first failing one is named; without it, the finished proof is verified with the
        pairing verifier (`zktensor.algebra.pairing` on Python ints: ~50 ms on the 2-core
        CI machine, whatever the circuit's size) and a failing one refused without an index.
        verify: verify the proof with the pairings even when the .r1cs check ran (None:
        only as the check without a .r1cs). profile: record per-node time and memory in
        ``self.last_run``."""
        words, where = self.witness_words(witness)
        w_std = words_to_limbs(words, self.device)
        g = self.graph(check=check, where=where)
        run = g.run({"w_std": w_std}, workers=workers or self.workers or self._default_workers(g),
                    device=self.device, profile=profile, keep=["assemble"])
        self.last_run = run
        pi_a, pi_b, pi_c = run.values["assemble"]
        proof = Proof(self.curve, pi_a, pi_b, pi_c)
        public = [int.from_bytes(words[i].astype("<u4").tobytes(), "little") for i in range(1, self.n_public + 1)]
        if verify is None:
            verify = check and self.r1cs_check is None
        if verify and not self.verify(proof, public):
            raise WitnessError(f"{where}: the proof does not verify, so the witness does not satisfy "
                               "the circuit (give the .r1cs to name the failing constraint)")
        return proof, public

    def _default_workers(self, g: Graph) -> int:
        lanes = len({n.lane for n in g.nodes.values()})
        if self.device.type == "cuda":
            return lanes
        return max(1, min(lanes, os.cpu_count() or 1, 4))

    def verify(self, proof: Proof, public) -> bool:
        from .verifier import verify
        return verify(self.zkey, public, proof)

    def prove_to_files(self, witness, proof_path, public_path, **kw) -> tuple[Proof, list[int]]:
        """Prove and write proof.json and public.json as snarkjs does (each atomically;
        nothing is written when proving fails)."""
        proof, public = self.prove(witness, **kw)
        write_proof(proof_path, proof)
        write_public(public_path, public)
        return proof, public


def prove(zkey, witness, **kw) -> tuple[Proof, list[int]]:
    """One-shot: load the key, prove one witness."""
    r1cs = kw.pop("r1cs", None)
    device = kw.pop("device", None)
    return Prover(zkey, r1cs=r1cs, device=device).prove(witness, **kw)


__all__ = ["Prover", "prove", "WitnessError", "default_device"]
