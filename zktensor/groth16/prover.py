"""The Groth16 prover over snarkjs proving keys: a graph of POLY and MSM nodes.

    prover = zt.groth16.Prover("circuit.zkey", r1cs="circuit.r1cs")   # key loaded once, resident
    proof, public = prover.prove("witness.wtns")                      # as many witnesses as you like
    prover.prove_to_files("w.wtns", "proof.json", "public.json", profile=True)
    print(prover.last_run.table())                                    # time and memory per node

The graph (``Prover.graph()``; names as in the profile; * = critical path):

    w_std ─┬─ Aw* ─┬─ Cw* = Aw∘Bw ─ intt_abc* ─ coset_ntt_abc* ─ join_abc* ─ msm_h* ──┐
           ├─ Bw* ─┘   │ (POLY, then the H-MSM: the critical path)                     │
           ├───────────┴─ check: C·w = Cw? (with the .r1cs, when given) ───────────────┤
           └─ scalars ─ msm_plan ─┬─ msm_a, msm_b1, msm_c (G1) ─ blind_ab: s·A + r·B1 ├─ assemble*
                (or msm_ab1c: the     │                                                  │
                 three in one tree)   └─ msm_b2 (G2)     the witness MSMs, beside POLY   │
    blinding: r, s and r·delta_1, s·alpha_1 + r·beta_1 + r·s·delta_1, s·delta_2 ──────┘

On a CPU with two or more cores, some witness MSMs run in a forked helper process instead
(one external node, ``msm_helper``, beside the rest; `groth16.helper` says why): B2 and C,
or all four where the witness is mostly 0s and 1s (`helper_split`); after such a
witness's four, from 2^16 points, the helper also takes the last half of H's terms
(``msm_h_helper``, `h_share`), and pi_c adds the two parts. Where the helper has A and B1
(those light witnesses) and no share of H, it also makes the blinding terms, s·A + r·B1
included (r, s drawn here and sent with the request): this process, which then runs POLY
and H alone on one worker, is left the assembly only.

On the Triton target (a GPU) the graph's tail is the device graph (`_device_nodes`):
the blinding and the assembly are device MSMs of a few points (``blind_ab``,
``blind_b``, ``assemble``), the witness check leaves a flag on the device, and the host
reads nothing until the three points (`proof_points`); tables past the device's budget
are uploaded in chunks (`host_bases`). ARCHITECTURE.md, "The proof on a device".

``Aw``, ``Bw`` are the sparse products with the zkey's coefficient section; they and
``Cw`` write the rows of one (3, N) buffer (node ``abc``, not drawn), and the three
evaluations go through one batched inverse NTT and one batched coset NTT
(``r1cs_to_qap`` explains snarkjs's coset and why p = a·b − c needs no division
by Z); ``msm_h`` takes p against the H points. The witness MSMs all take the whole
witness as scalars (C's bases, for the private wires, come after identity points for
the public ones), so ``msm_plan`` makes their digits, sort and bucket layout once
(`ops.msm.msm_plan`) for msm_a, msm_b1, msm_c and msm_b2. For keys of up to `key.MERGE_UPTO` wires
the three G1 witness MSMs (A, B1 and C) are one node instead,
``msm_ab1c``: one bucket tree over the three sections' bases side by side
(`ops.msm.msm_many`), so they share its launches, sort, reduction and final combination,
which are most of a small MSM's cost. The MSM bases are prepared once, when the Prover is
made, and stay on its device (`key.ResidentKey`, which also holds the memory policy).

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
(node ``check``, as soon as POLY's ``Cw`` is ready) and refused with the index of the
first failing one (``WitnessError``), and no proof is returned. The zkey alone cannot
name a failing constraint (it holds no C matrix, and snarkjs's C·w := A·w ∘ B·w
hides a violation from the POLY stage). The check reuses POLY's A·w ∘ B·w (``Cw``; the
key's A and B were checked against the .r1cs's when it was loaded) and computes C·w.
Every finished proof is then verified with the pairing verifier before it is returned:
without a ``.r1cs`` a failure refuses the witness (or the key) without an index; after
a passed ``.r1cs`` check it names the key as wrong (``FormatError``).
``prove(verify=False)`` skips the verification, ``prove(check=False)`` both (as snarkjs
and rapidsnark do).
"""
from __future__ import annotations

import functools
import os
import warnings

import numpy as np
import torch

from ..algebra.curves import lincomb
from ..kernels import msm_small_cpu
from ..kernels.field_programs import to_mont
from ..ops.elementwise import apply
from ..ops.msm import MSMConfig, msm, msm_many, msm_plan
from ..ops.msm import device as msm_device
from ..points import PointTensor, cat as cat_points
from ..runtime.graph import Graph, RunResult
from ..runtime.threads import launch_threads, num_threads
from ..tensor import FieldTensor
from .blinding import Blinding, draw
from .formats.consistency import witness_words
from .formats.json_io import Proof
from .outputs import check_outputs, write_proof_pair
from .host_bases import HostBases
from .key import PATH, WITNESS_UNITS, Bases, ResidentKey, default_device
from .r1cs_to_qap import WitnessError, coefficients, coset_evaluations, join_abc, words_to_limbs

HELPER_UNITS = ("B2", "c")      # the helper process's witness MSMs by default (`graph(helper=True)`)
ONE_WEIGHT = 1 / 20     # an MSM's cost of a scalar 1 against a dense scalar's: one addition,
                        # where a dense scalar costs one a window (BN254's small MSMs: ~20)
MAIN_EXTRA = 5000       # the rest of this process's work (the witness check, POLY, blinding,
                        # assembly, verification) in dense G1 points, small circuits on the CPU
C_HERE_FROM = 1 << 14   # domain from which a dense witness's C MSM runs here, not in the helper
# the helper's share of the H MSM's points after a light witness's MSMs, from each domain up
# (`h_share`; none below the first)
H_SHARES = ((1 << 16, 0.5),)


def helper_split(words: np.ndarray, domain: int) -> tuple:
    """The witness MSMs the helper process runs for this witness ((n, L) standard-form
    words), so that the two processes finish together. This process always runs the H
    MSM (domain points, all dense) and the rest of the proof. With s = the witness's dense
    scalars + ONE_WEIGHT·its ones:

    * a light witness (values mostly 0 and 1: bit decompositions, range checks, a
      quantised model's activations), 6·s <= domain + MAIN_EXTRA (A, B1, C, and B2 at
      ~3 G1 points a point, against H): all four go to the helper, so that H runs here
      alone rather than beside A and B1 in one interpreter (whose Python halves queue for
      one GIL);
    * a dense one: B2, and C while the domain is below C_HERE_FROM (a small MSM is mostly
      fixed costs, which this process already has more of).

    The rule and its constants come from same-run timings of each split on the bench and
    zkml circuits, 2^11 to 2^19 (the commits that made them so)."""
    ones = int(((words[:, 0] == 1) & ~words[:, 1:].any(axis=1)).sum())
    s = int(words.any(axis=1).sum()) - ones + ONE_WEIGHT * ones
    if 6 * s <= domain + MAIN_EXTRA:
        return ("B2", "a", "b1", "c")
    return ("B2",) if domain >= C_HERE_FROM else ("B2", "c")


def h_share(domain: int, units: tuple) -> int:
    """How many of the H MSM's points (the last ones) the helper process takes after its
    witness MSMs (`units`, from `helper_split`): when it has all four (a light witness),
    the share of `H_SHARES` for the domain, where its witness MSMs leave it idle beside H;
    none otherwise (smaller domains: a second request's fixed costs and H's second bucket
    reduction outweigh the gain; dense witnesses: the helper is the busier process
    already). From interleaved timings of shares 0 to 0.7 on the bench circuits, 2^12 to
    2^18 (commits 9a0ac92, which made the rule, 43a1ad8, the one that made the shares
    depend on the domain once B1 and B2 stopped sharing A's plan, and the one that made
    them one again once the scalars 1's bucket was summed by `msm_tree.halving_sum`)."""
    if not set(WITNESS_UNITS) <= set(units):
        return 0
    share = max((f for d, f in H_SHARES if domain >= d), default=0.0)
    return int(share * domain)


class Prover(ResidentKey):
    """A proving key loaded once and kept resident (`key.ResidentKey`); ``prove`` takes witnesses.

    zkey, r1cs, device, msm_config, checkpoint, verbose, table_cache, table_budget: as `ResidentKey`'s (the .r1cs
    enables the witness check, see the module docstring). workers: scheduler threads
    (default: one per lane on a GPU, the CPU count (at most 4) on a CPU). helper: run some
    witness MSMs (`helper_split`) in a forked helper process (`groth16.helper`), made at
    the first proof; None (default): on a CPU with 2+ cores
    unless workers=1. ``close()`` (or ``with Prover(...) as p:``) stops it.
    """

    def __init__(self, zkey, *, r1cs=None, device=None, msm_config: MSMConfig | None = None,
                 checkpoint: int | None = None, workers: int | None = None, helper: bool | None = None,
                 verbose: bool = False, table_cache: bool | None = None, table_budget: int | None = None):
        dev = torch.device(device) if device is not None else default_device()
        if helper and dev.type != "cpu":
            raise ValueError("helper=True: the MSM helper process serves CPU provers only")
        self.workers = workers
        self.helper = helper
        self._helper = None
        self._helper_lost = False
        self.last_run: RunResult | None = None
        super().__init__(zkey, r1cs=r1cs, device=dev, msm_config=msm_config, checkpoint=checkpoint,
                         verbose=verbose, table_cache=table_cache, table_budget=table_budget)

    # -- the witness MSMs --------------------------------------------------------------
    def _ab1c(self, secs, s) -> dict:
        """{section: point} for the named sections of the merged G1 witness table, one bucket tree."""
        B = self.bases["ab1c"]
        idx = [("a", "b1", "c").index(u) for u in secs]
        if B.prepared is None:
            return {u: self.G1.identity(device=self.device) for u in secs}
        s = s.contiguous()          # one object for every job: `msm_many` makes its words once
        pts = self._many(B, [(s, B.offsets[i]) for i in idx])
        return {u: pts[j] for j, u in enumerate(secs)}

    def _many(self, B: Bases, jobs) -> PointTensor:
        """`ops.msm.msm_many` of (scalars, offset) jobs against B's prepared table (host or resident)."""
        if isinstance(B.prepared, HostBases):
            return B.prepared.many(jobs)
        return msm_many(jobs, B.prepared, config=self._msm_cfg())

    def _witness_msms(self, units, s: FieldTensor) -> dict:
        """{unit: Σ w_i·P_i} for the named witness MSMs (a, b1, c, B2), one after the other:
        the helper process's work, and this process's when the helper is lost."""
        B, cfg = self.bases, self._msm_cfg()
        out = {}
        secs = [u for u in ("a", "b1", "c") if u in units and "ab1c" in B]
        if secs:
            out.update(self._ab1c(secs, s))
        tables = [u for u in units if u in B]
        group = self._plan_group(tables)
        plan = msm_plan(s.contiguous(), *(B[t].prepared for t in group), config=cfg) if group else None
        for t in tables:
            out[t] = msm(plan, B[t].prepared, config=cfg) if t in group else self._msm(B[t], s, self._group(t))
        return out

    # -- the helper process -------------------------------------------------------------
    def _helper_for(self, workers: int | None):
        """The helper process for this proof (forked at the first proof that uses it), or None:
        off on a GPU and in the device graph (`on_device`: the Triton target, on CPU tensors too),
        with helper=False, with one worker (sequential proofs) or one core, and once lost."""
        if self.helper is False or self.device.type != "cpu" or self.on_device() or self._helper_lost:
            return None
        if self.helper is None and ((workers or self.workers or 2) < 2 or num_threads() < 2):
            return None
        if self._helper is not None:
            return self._helper if self._helper.alive else None
        from .helper import Helper
        _ = self._host_blinding     # made before the fork: the child has it too
        L = self.F.limbs
        groups = {u: self._group(u) for u in WITNESS_UNITS} | {"H": self.G1}
        self._helper = Helper(self._helper_work, {"w": (L, self.n_vars), "p": (L, self.domain_size)}, groups)
        return self._helper

    def _helper_work(self, job: tuple, inputs: dict) -> dict:
        """The helper process's side of a request (`_helper_run`): ("witness", units, rs) over
        the witness "w", with rs = (r, s) also "blinding": the blinding terms (`_blinding_terms`)
        and s·A + r·B1 ("ab"); or ("h", lo) over "p", the H scalars from point lo on."""
        if job[0] == "h":
            return {"H": self._h_part(FieldTensor(self.F, inputs["p"]), job[1])}
        _, units, rs = job
        out = self._witness_msms(units, FieldTensor(self.F, inputs["w"]))
        if rs is not None:
            bl = self._blinding_terms(*rs)
            out["blinding"] = dict(bl, ab=self._blind_ab(out["a"], out["b1"], bl))
        return out

    def _helper_run(self, job: tuple, name: str, s: FieldTensor) -> dict:
        """`_helper_work(job)` in the helper process, s its input `name`; computed here
        instead (with a warning, and for every later proof) if the helper has died: one
        warning, from the request that found it dead (a proof's other helper node, if it
        asks after that, gets `HelperGone`)."""
        from .helper import HelperError, HelperGone
        h = self._helper
        try:   # the child's launches: this external node's share of the cores (`Graph.run`)
            return h.run(job, {name: s.data}, threads=launch_threads())
        except HelperError as e:
            if h.alive:
                raise                   # its work raised: the same would happen here
            self._helper_lost = True
            if not isinstance(e, HelperGone):
                warnings.warn(f"{e}; the prover computes its MSMs itself from now on", RuntimeWarning,
                              stacklevel=2)
            return self._helper_work(job, {name: s.data})

    def close(self) -> None:
        """Stop the helper process (also done when the Prover is garbage-collected)."""
        if self._helper is not None:
            self._helper.close()
            self._helper = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- witnesses -------------------------------------------------------------------
    def witness_words(self, witness) -> tuple[np.ndarray, str]:
        """(n_vars, L) standard-form uint32 words of a witness given as a path, a Wtns,
        or a sequence of ints; checked against the key (`formats.consistency.witness_words`)."""
        return witness_words(self.zkey, witness)

    # -- the graph -------------------------------------------------------------------
    def graph(self, check: bool = True, where: str = "witness", helper: bool | tuple = False,
              h_helper: int = 0) -> Graph:
        """The prover's graph; its only input is ``w_std``, the witness as (L, n_vars) limbs.
        In the paper's order: H (the quotient's coefficients and Σ h_j·H_j), the witness MSMs
        A, B1, C and B2, the blinding, the assembly of pi_a, pi_b, pi_c. helper: the witness
        MSMs named (True: `HELPER_UNITS`; `prove` names them by `helper_split`) are one
        external node, ``msm_helper``, run by the helper process (`_helper_for` makes it);
        h_helper: the number of H points (the last ones) whose MSM the helper runs after
        them, node ``msm_h_helper`` (`prove`: `h_share`)."""
        helper = HELPER_UNITS if helper is True else tuple(helper or ())
        if not 0 <= h_helper < self.domain_size:
            raise ValueError(f"h_helper={h_helper}: the helper's share of the {self.domain_size} H points")
        if h_helper and self.on_device():
            raise ValueError("h_helper: the device graph has no helper process")
        g = Graph("groth16_prove")
        self._h_nodes(g, h_helper)
        # the helper makes the blinding where it has A and B1 and no share of H: it idles
        # beside POLY and H then, this process's one worker (`_default_workers`) does not.
        # With a share of H, the helper is the later of the two already (same-run timings:
        # the commit that made this so)
        remote_blinding = {"a", "b1"} <= set(helper) and not h_helper and self._host_blinding is not None
        wit = self._witness_nodes(g, helper, remote_blinding)
        if self.on_device():
            self._device_nodes(g, wit, check)
        else:
            if not remote_blinding:
                self._blinding_nodes(g, wit)
            self._assembly_nodes(g, wit, check, where, remote_blinding)
        return g

    def on_device(self) -> bool:
        """Whether a proof now runs the device graph (the Triton target: `_device_nodes`)."""
        return msm_device.on_device(self.device)

    def _h_nodes(self, g: Graph, h_helper: int = 0) -> None:
        """POLY, the critical path: A·w, B·w, C·w = A·w∘B·w, one batched inverse NTT and one
        batched coset NTT of the three, p = a·b − c (`r1cs_to_qap`), then Σ p_j·H_j (the
        last h_helper terms in the helper process, `graph`)."""
        P = dict(lane="poly", critical=True, kind="poly")
        # a, b, c are written as the rows of one (3, N) buffer, the batched inverse NTT's
        # input: stacking them was a copy of the three, on the critical path
        g.add("abc", lambda: self.F.empty((3, self.domain_size), device=self.device), [], **P)
        g.add("Aw", lambda w, abc: self.A_mat.matvec(w, out=abc[0]), ["w_std", "abc"], **P)
        g.add("Bw", lambda w, abc: self.B_mat.matvec(w, out=abc[1]), ["w_std", "abc"], **P)
        g.add("Cw", lambda a, b, abc: apply("mul", a, b, out=abc[2]), ["Aw", "Bw", "abc"], **P)
        g.add("intt_abc", lambda abc, c: coefficients(abc), ["abc", "Cw"], **P)
        g.add("coset_ntt_abc", lambda x: coset_evaluations(x, self.shift), ["intt_abc"], **P)
        g.add("join_abc", join_abc, ["coset_ntt_abc"], **P)
        if not h_helper:
            g.add("msm_h", lambda p: self._msm(self.bases["H"], p, self.G1), ["join_abc"], lane="poly",
                  critical=True, kind="msm")
            return
        k = self.domain_size - h_helper
        g.add("msm_h", lambda p: self._h_part(p[:k], 0), ["join_abc"], lane="poly", critical=True, kind="msm")
        # queued behind msm_helper's request: the helper's second request of the proof
        g.add("msm_h_helper", lambda p: self._helper_run(("h", k), "p", p[k:])["H"], ["join_abc"],
              lane="helper", kind="msm", priority=1, worker="external")

    def _h_part(self, p: FieldTensor, lo: int) -> PointTensor:
        """Σ_j p_j·H_(lo+j), a slice of the H MSM (`_h_nodes`), against the whole table."""
        B = self.bases["H"]
        if B.prepared is None:
            return self.G1.identity(device=self.device)
        return self._many(B, [(p.contiguous(), lo)])[0]

    def _witness_nodes(self, g: Graph, helper: tuple, remote_blinding: bool = False) -> list[str]:
        """Σ w_i·P_i over A, B1, C (G1) and B2 (G2), beside POLY; each node's value is
        {unit: point}. The helper process's units are one external node, the rest nodes of
        this process; with remote_blinding its value also has "blinding" (`_helper_work`).
        Returns the nodes."""
        F, B = self.F, self.bases
        g.add("scalars", lambda w: FieldTensor(F, to_mont(F, w)), ["w_std"], lane="g1", kind="poly", priority=2)
        remote = helper
        local = [u for u in WITNESS_UNITS if u not in remote]
        tables = [u for u in local if u in B]           # tables of their own (not ab1c's sections)
        shared = self._plan_group(tables)
        cfg = self._msm_cfg()
        wit = []
        if shared:
            # digits, sort and bucket layout once for the MSMs that share the witness as scalars
            g.add("msm_plan", lambda s: msm_plan(s.contiguous(), *(B[t].prepared for t in shared), config=cfg),
                  ["scalars"], lane="g1", kind="msm", priority=1)
        secs = [u for u in ("a", "b1", "c") if u in local and "ab1c" in B]
        if secs:
            wit.append(g.add("msm_ab1c", lambda s: self._ab1c(secs, s), ["scalars"], lane="g1", kind="msm"))
        # the G2 MSM is the longest side node: started first, the G1 MSMs fill in around it
        for t in tables:
            lane, prio = ("g2", 1) if t == "B2" else ("g1", 0)
            if t in shared:
                fn, ins = (lambda p, t=t: {t: msm(p, B[t].prepared, config=cfg)}), ["msm_plan"]
            else:
                fn, ins = (lambda s, t=t: {t: self._msm(B[t], s, self._group(t))}), ["scalars"]
            wit.append(g.add(f"msm_{t.lower()}", fn, ins, lane=lane, kind="msm", priority=prio))
        if remote:
            def helper_msms(s):
                rs = draw(self.F.p) if remote_blinding else None
                return self._helper_run(("witness", remote, rs), "w", s)
            wit.append(g.add("msm_helper", helper_msms, ["scalars"], lane="helper", kind="msm", priority=1,
                             worker="external"))
        return wit

    def _blinding_nodes(self, g: Graph, wit: list[str]) -> None:
        """r, s and the blinding terms without an MSM (`_blinding`), then s·A + r·B1."""
        # short and needed only at the end, but left to the end by its rank it became the
        # proof's tail (every worker busy until the last MSM): run early instead
        g.add("blinding", self._blinding, [], lane="blind", kind="msm", priority=1)
        k = len(wit)
        g.add("blind_ab", lambda *v: self._blind_ab(_units(v[:k])["a"], _units(v[:k])["b1"], v[k]),
              wit + ["blinding"], lane="g1", kind="msm")

    def _assembly_nodes(self, g: Graph, wit: list[str], check: bool, where: str,
                        remote_blinding: bool = False) -> None:
        """pi_a, pi_b, pi_c (`_assemble`), after the witness check when a .r1cs was given; the
        blinding terms from nodes blinding and blind_ab, or with remote_blinding from the
        helper's value."""
        hs = [n for n in ("msm_h", "msm_h_helper") if n in g.nodes]
        ins = wit + hs + ([] if remote_blinding else ["blind_ab", "blinding"])
        if check and self.r1cs_check is not None:
            # A·w∘B·w is POLY's Cw (the key's A and B are the .r1cs's, checked at load): only C·w is left.
            # Last among the ready nodes: only assemble waits for it, and run first it held up
            # POLY, the critical path, wherever one worker runs it (a light witness's proof)
            g.add("check", lambda w, ab: self.r1cs_check.check(w, where, ab), ["w_std", "Cw"], lane="check",
                  kind="check", priority=-1)
            ins.append("check")
        k = len(wit)

        def assemble(*v):
            u = _units(v[:k])
            h = v[k:k + len(hs)]
            ab, bl = (u["blinding"]["ab"], u["blinding"]) if remote_blinding else v[k + len(hs):k + len(hs) + 2]
            return self._assemble(u["a"], u["B2"], u["c"], h, ab, bl)
        g.add("assemble", assemble, ins, lane="poly", critical=True, kind="msm")

    # -- the device graph's blinding and assembly ----------------------------------------
    def _device_nodes(self, g: Graph, wit: list[str], check: bool) -> None:
        """Blinding and assembly on the device, with nothing read back before the proof's
        three points: the blinding terms are device MSMs of a few points whose scalars
        (r, s, r·s) are uploaded once from pinned memory (`_device_blinding`), so the
        exceptional additions (an identity, equal points) are the MSM kernels' own:

            blind_ab:  [pi_a, pi_c - H] = [[1, 0, 0, 1, 0, r], [s, r, 1, s, r, r·s]]
                                          · [A, B1, C, alpha_1, beta_1, delta_1]   (G1)
            blind_b:   pi_b = B2 + beta_2 + s·delta_2                              (G2)
            assemble:  pi_c = (pi_c - H) + H: a sum of two points (one launch, `point_sums`)

        blind_ab and blind_b run beside POLY; the critical path gains only the last sum.
        The witness check (a .r1cs given) leaves a device flag that the prover reads with
        the proof (`proof_points`)."""
        g.add("blinding", self._device_blinding, [], lane="blind", kind="msm", priority=1)
        g1 = [n for n in wit if _produces(n) & {"a", "b1", "c"}]
        g2 = [n for n in wit if "B2" in _produces(n)]
        k1, k2 = len(g1), len(g2)
        g.add("blind_ab", lambda *v: self._device_ac(_units(v[:k1]), v[k1]), g1 + ["blinding"], lane="g1", kind="msm")
        g.add("blind_b", lambda *v: self._device_b(_units(v[:k2])["B2"], v[k2]), g2 + ["blinding"], lane="g2",
              kind="msm")
        ins = ["blind_ab", "blind_b", "msm_h"]
        if check and self.r1cs_check is not None:
            g.add("check", lambda w, ab: self.r1cs_check.unsatisfied(w, ab), ["w_std", "Cw"], lane="check",
                  kind="check", priority=10)
            ins.append("check")
        self._device_constants()        # made here, before the run (see its docstring)

        def assemble(ac, pi_b, h, failed=None):
            pts = cat_points([ac[1].reshape(1), h.reshape(1)])
            pi_c = msm_device.point_sums(self.G1, pts, 2)[0]
            return ac[0], pi_b, pi_c, failed
        g.add("assemble", assemble, ins, lane="poly", critical=True, kind="msm")

    def _device_constants(self) -> dict:
        """The device graph's fixed operands, made once, when a graph is built (before any run,
        on the caller's stream, which every lane waits for): the key's points the blinding
        MSMs add ([alpha_1, beta_1, delta_1], [beta_2, delta_2])."""
        c = getattr(self, "_dev_constants", None)
        if c is None:
            c = self._dev_constants = {
                "g1": cat_points([self.alpha_1.reshape(1), self.beta_1.reshape(1), self.delta_1.reshape(1)]),
                "g2": cat_points([self.beta_2.reshape(1), self.delta_2.reshape(1)])}
        return c

    def _upload(self, t: torch.Tensor) -> torch.Tensor:
        """Host data to the key's device; to a GPU from pinned memory, queued on the current
        stream without the host waiting (a pageable copy would wait for the stream)."""
        if self.device.type == "cuda":
            return t.pin_memory().to(self.device, non_blocking=True)
        return t.to(self.device)

    def _device_blinding(self) -> dict:
        """r, s from the CSPRNG and the scalar rows of blind_ab and blind_b (`_device_nodes`),
        as standard-form words on the device."""
        q = self.F.p
        r, s = draw(q)
        rows_1 = [[1, 0, 0, 1, 0, r], [s, r, 1, s, r, r * s % q]]
        return {"r": r, "s": s, "g1": self._upload(_scalar_words(self.F, rows_1)),
                "g2": self._upload(_scalar_words(self.F, [[1, 1, s]]))}

    def _device_ac(self, u: dict, bl: dict) -> PointTensor:
        """[pi_a, pi_c - H] (`_device_nodes`): one G1 device MSM of six points, two rows."""
        pts = cat_points([u["a"].reshape(1), u["b1"].reshape(1), u["c"].reshape(1), self._device_constants()["g1"]])
        return msm_device.device_msm(self.G1, bl["g1"], pts, MSMConfig())

    def _device_b(self, B2: PointTensor, bl: dict) -> PointTensor:
        """pi_b = B2 + beta_2 + s·delta_2 (`_device_nodes`): a G2 device MSM of three points."""
        pts = cat_points([B2.reshape(1), self._device_constants()["g2"]])
        return msm_device.device_msm(self.G2, bl["g2"], pts, MSMConfig())[0]

    def _msm(self, bases: Bases, scalars: FieldTensor, G) -> PointTensor:
        if bases.prepared is None:
            return G.identity(device=self.device)
        if isinstance(bases.prepared, HostBases):
            return bases.prepared.msm(bases.prepared.words(scalars))[0]
        return msm(scalars.contiguous(), bases.prepared, config=self._msm_cfg())

    @functools.cached_property
    def _host_blinding(self) -> Blinding | None:
        """The blinding in the CPU lanes kernel (`groth16.blinding`), where it runs; None: the
        tensor fixed-base tables (a GPU, or a CPU without 8-lane vectors)."""
        if self.on_device() or not msm_small_cpu.available():
            return None
        return Blinding.of_key(self.zkey, self.G1.params, self.G2.params).with_ladders()   # resident: once

    def _blinding(self) -> dict:
        """r, s from the CSPRNG and the blinding terms that need no MSM result (`_blinding_terms`)."""
        return self._blinding_terms(*draw(self.F.p))

    def _blinding_terms(self, r: int, s: int) -> dict:
        """r, s and the blinding terms that need no MSM result, as affine Python-int points:
        r·delta_1, s·alpha_1 + r·beta_1 + r·s·delta_1 (G1) and s·delta_2 (G2)."""
        q = self.F.p
        hb = self._host_blinding
        if hb is not None:
            r_delta_1, c_fixed, s_delta_2 = hb.fixed_terms(r, s)
        else:
            g1 = self.fixed_1.combine([[r, 0, 0], [r * s % q, s, r]])
            r_delta_1, c_fixed = g1.to_affine()
            (s_delta_2,) = self.fixed_2(s).reshape(1).to_affine()
        return {"r": r, "s": s, "r_delta_1": r_delta_1, "c_fixed": c_fixed, "s_delta_2": s_delta_2}

    def _blind_ab(self, A, B1, bl):
        """s·(Σ w_i·A_i) + r·(Σ w_i·B1_i), the blinding terms of pi_c that need the MSMs: two
        points, in the lanes kernel or on Python ints (Straus, `algebra.curves.lincomb`),
        where the tensor double-and-add was ~250 launches, all on the proof's critical path
        at its end. An affine point as Python ints (None: the identity), for `_assemble`."""
        a, b1 = cat_points([A.reshape(1), B1.reshape(1)]).to_affine()
        hb = self._host_blinding
        if hb is not None:
            return msm_small_cpu.msm_many([hb.ab_job(a, b1, bl["r"], bl["s"])], threads=1)[0]
        return lincomb(self.G1.params, None, [(bl["s"], a), (bl["r"], b1)])

    @functools.cached_property
    def _alpha_beta_affine(self) -> tuple:
        """alpha_1 and beta_2 as Python-int affine points (the key's constants in every pi_a, pi_b)."""
        return self.alpha_1.to_affine(), self.beta_2.to_affine()

    def _assemble(self, A, B2, C, H: list, ab, bl):
        """(H: the H MSM's parts, `_h_nodes`.)
        snarkjs's pi_c = C + H + s·pi_a + r·b1 − r·s·delta_1 with pi_a = A + alpha_1 + r·delta_1
        and b1 = B1 + beta_1 + s·delta_1, expanded: C + H + s·A + r·B1 + (s·alpha_1 + r·beta_1
        + r·s·delta_1). These few points are summed on Python ints (`lincomb` with 1-bit
        scalars: one inversion a sum) after one conversion to affine per group: as tensor
        additions each sum and conversion was launches and host reads of its own, at the end
        of the proof's critical path."""
        G1, G2 = self.G1.params, self.G2.params
        a, c, *h = cat_points([P.reshape(1) for P in (A, C, *H)]).to_affine()
        (b2,) = B2.reshape(1).to_affine()
        alpha_1, beta_2 = self._alpha_beta_affine

        def total(G, *points):
            return lincomb(G, None, [(1, P) for P in points])
        return (total(G1, a, alpha_1, bl["r_delta_1"]), total(G2, b2, beta_2, bl["s_delta_2"]),
                total(G1, c, *h, ab, bl["c_fixed"]))

    # -- proving ---------------------------------------------------------------------
    def prove(self, witness, *, check: bool = True, verify: bool | None = None, profile: bool = False,
              workers: int | None = None) -> tuple[Proof, list[int]]:
        """A proof and the public signals for one witness (a .wtns path, a Wtns or ints).

        check: refuse a witness that does not satisfy the circuit. With the .r1cs given to
        the Prover, every constraint is checked before the proof is assembled and the
        first failing one is named. verify: verify the finished proof with the pairing
        verifier (whatever the circuit's size, one 4-pairing check) and return none that
        fails (None: as ``check``). A failure after a passed .r1cs check means the key is
        wrong (FormatError naming it); without the .r1cs, the witness or the key
        (WitnessError). profile: record per-node time and memory in ``self.last_run``."""
        words, where = self.witness_words(witness)
        w_std = words_to_limbs(words, self.device)
        helper = self._helper_for(workers)
        units = helper_split(words, self.domain_size) if helper is not None else ()
        g = self.graph(check=check, where=where, helper=units, h_helper=h_share(self.domain_size, units))
        run = g.run({"w_std": w_std}, workers=workers or self.workers or self._default_workers(g, units),
                    device=self.device, profile=profile, keep=["assemble"])
        self.last_run = run
        pi_a, pi_b, pi_c = self.proof_points(run, where)
        proof = Proof(self.curve, pi_a, pi_b, pi_c)
        public = [int.from_bytes(words[i].astype("<u4").tobytes(), "little") for i in range(1, self.n_public + 1)]
        if check if verify is None else verify:
            from .verifier import check_own
            check_own(self.zkey, public, proof, where=where, key_checked=self._key_checked(),
                      r1cs_path=self.r1cs_check.path if check and self.r1cs_check is not None else None)
        return proof, public

    def proof_points(self, run: RunResult, where: str = "witness") -> tuple:
        """pi_a, pi_b, pi_c as affine points from a run of `graph`. The device graph's
        assembly leaves them (and the witness check's flag) on the device: here, after the
        run, is where the host first reads a value (WitnessError if the check failed)."""
        out = run.values["assemble"]
        if len(out) == 3:
            return out
        pi_a, pi_b, pi_c, failed = out
        if failed is not None:
            bad, i = failed.tolist()
            if bad:
                raise self.r1cs_check.error(i, where)
        a_c = cat_points([pi_a.reshape(1), pi_c.reshape(1)]).to_affine()
        return a_c[0], pi_b.to_affine(), a_c[1]

    def _default_workers(self, g: Graph, helper_units: tuple = ()) -> int:
        """One per lane on a GPU; on the CPU one per core (at most 4). An external node's
        process (the MSM helper) does not take a core off: its work leaves the cores idle
        often enough that a worker fewer was slower (measured: the commit that made this so).
        Except where the helper has every witness MSM (a light witness, `helper_split`): this
        process is then left POLY and H, which ran faster one after the other than side by
        side, where their launches' Python halves queue for one GIL beside the helper's
        busy core (measured: the commit that made this so)."""
        lanes = len({n.lane for n in g.nodes.values() if n.worker == "thread"})
        if self.device.type == "cuda":
            return lanes
        if set(WITNESS_UNITS) <= set(helper_units):
            return 1
        return max(1, min(lanes, os.cpu_count() or 1, 4))

    def verify(self, proof: Proof, public) -> bool:
        from .verifier import verify_own
        return verify_own(self.zkey, public, proof, key_checked=self._key_checked())

    def _key_checked(self) -> bool:
        """Whether the key passed key_check (then its points need no second test)."""
        from .key_check import is_current
        return is_current(getattr(self, "validated", {}).get("zkey_check"))

    def prove_to_files(self, witness, proof_path, public_path, **kw) -> tuple[Proof, list[int]]:
        """Prove and write proof.json and public.json as snarkjs does, as one pair
        (`outputs.write_proof_pair`: the old pair or the new one, never a mix); the paths
        are checked before any work, and nothing is written when proving fails."""
        check_outputs([proof_path, public_path], inputs=[self.path, witness if isinstance(witness, PATH) else None],
                      what=["proof", "public signals"])
        proof, public = self.prove(witness, **kw)
        write_proof_pair(proof_path, public_path, proof, public)
        return proof, public


def _units(values) -> dict:
    """{unit: point} of the witness MSM nodes' values."""
    return {u: p for d in values for u, p in d.items()}


def _produces(node: str) -> set:
    """The witness units (a, b1, c, B2) a witness MSM node of `_witness_nodes` computes (in
    the device graph, which has no helper node)."""
    if node == "msm_ab1c":
        return {"a", "b1", "c"}
    unit = node[len("msm_"):]
    return {"B2" if unit == "b2" else unit}


def _scalar_words(F, rows) -> torch.Tensor:
    """(L, B, n) int32 standard-form words of rows of ints in [0, p) (a device MSM's scalars)."""
    L = F.limbs
    raw = b"".join(int(k).to_bytes(4 * L, "little") for row in rows for k in row)
    w = np.frombuffer(raw, dtype="<u4").reshape(len(rows), len(rows[0]), L).transpose(2, 0, 1)
    return torch.from_numpy(np.ascontiguousarray(w).view(np.int32))


def describe_run(run: RunResult) -> str:
    """How a proof ran, for reports: "graph, 1 worker + helper process"."""
    w = f"graph, {run.workers} worker{'s' if run.workers != 1 else ''}"
    return w + (" + helper process" if "msm_helper" in run.external else "")


def prove(zkey, witness, **kw) -> tuple[Proof, list[int]]:
    """One-shot: load the key, prove one witness."""
    r1cs = kw.pop("r1cs", None)
    device = kw.pop("device", None)
    return Prover(zkey, r1cs=r1cs, device=device).prove(witness, **kw)


__all__ = ["Prover", "prove", "WitnessError", "default_device", "describe_run"]
