"""Launches and host synchronisations per op and size on the Triton target, without a GPU.

    python -m bench.gpu_counts                       # -> bench/results/gpu_counts.json and .md
    python -m bench.gpu_counts --msm-log-sizes 10,12 --ntt-log-sizes 10 --no-save
    python -m bench.gpu_counts --proof tests/fixtures/build/poseidon_like    # + a proof's graph, per node

What a GPU would be asked to do, counted on CPU tensors: every torch operation that
computes and every Triton kernel launch (`zktensor.runtime.counters`), and every host
read of a tensor value or copy to the host. The Triton kernels' launches are made and
counted but not interpreted (the interpreter would take hours at these sizes; their
outputs are not looked at): the host program is exactly the one a GPU run makes, so
the counts are the GPU's. The tests check the same counts on interpreted runs at small
sizes (tests/ec/test_msm_device.py, tests/ntt/test_ntt_sync.py). No time is measured.

For each accumulation launch of the device MSM it also counts, from the launch's
arguments as the kernel reads them, the point formulas a GPU would evaluate: a block of
`MSMConfig.block` lanes loops as often as its longest segment has entries after the
first, every lane of it evaluating the formula each trip (`accumulation_steps`; the
tests check it against the interpreted kernel's own calls). Additions over formulas is
the share of those evaluations that add an entry; the rest are lanes waiting for their
block's longest segment.

A proof's graph (`--proof`, a fixture folder: circuit_final.zkey, witness.wtns and its
.r1cs) is the device graph of `Prover` on the Triton target, its MSM and NTT kernels
counted and not run as above, its other kernels (elementwise programs, the sparse
products) interpreted; the counts per node are the profile's (`RunResult.stats`).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def accumulation_steps(kernel, args, block: int) -> dict | None:
    """Of one launch of the device MSM's `accumulate` or `accumulate_affine` with `args`:
    the entries its lanes read, the additions they need (each lane's first entry is its
    sum's start) and the point formulas its blocks of `block` lanes evaluate (a block loops
    max(entries) - 1 times over all its lanes; `kernels.msm_device._accumulate`). None for
    another kernel."""
    import torch
    import torch.nn.functional as Fn
    if not getattr(kernel, "__name__", "").startswith("accumulate"):
        return None
    a = dict(zip(kernel.arg_names, args))
    ends, start, NB, S = a["ends"], a["start"], a["NB"], a["S"]
    j = torch.arange(a["n_lanes"], device=ends.device)
    b = torch.searchsorted(ends, j, right=True)              # the first bucket with ends > j
    F = int(ends[-1]) if a["balanced"] else a["n_lanes"]     # lanes of full segments
    tail = j >= F                                            # then a lane a bucket, in `last`'s order
    b = torch.where(tail, torch.cat([a["last"], torch.full((1,), NB)])[(j - F).clamp(0, NB)], b)
    valid = b < NB
    b = b.clamp_max(NB - 1)
    before = torch.where(b > 0, ends[(b - 1).clamp_min(0)], 0)
    i = torch.where(tail, ends[b] - before, j - before)       # the segment's index in its bucket
    e0 = start[b] + i * S
    e1 = torch.minimum(e0 + S, start[b + 1])
    entries = torch.where(valid, (e1 - e0).clamp_min(0), 0)
    trips = Fn.pad(entries, (0, (-len(entries)) % block)).reshape(-1, block).amax(dim=1)
    return {"entries": int(entries.sum()), "additions": int((entries - 1).clamp_min(0).sum()),
            "steps": int((trips - 1).clamp_min(0).sum()) * block}


@contextlib.contextmanager
def kernels_not_run(steps: list | None = None, field_programs: bool = False):
    """Triton launches of the device MSM and of the NTT are counted, not interpreted (but the
    GLV split's, interpreted: its digits are the accumulation's);
    `steps` collects `accumulation_steps` of each accumulation launch, for blocks of
    MSMConfig's lanes; `field_programs`: the elementwise field programs' launches too (an
    MSM's: GLV's product of the bases' x-coordinates, whose value nothing here reads)."""
    from zktensor.kernels import elementwise, ntt_triton
    from zktensor.ops.msm import device
    from zktensor.runtime import counters

    class _Kernel:                  # ntt_triton counts the launch around this call itself
        def __getitem__(self, grid):
            return lambda *a, **kw: None

    class _Module:
        ntt_pass = _Kernel()

    real_launch, real_module = device._launch, ntt_triton.module

    lanes = _block()

    def launch(kernel, grid, args, *a, **kw):
        if getattr(kernel, "__name__", "") == "glv_split":     # it makes the digits the counts read
            return real_launch(kernel, grid, args, *a, **kw)
        with counters.kernel():         # (inside: the counting's own torch ops and reads are not the MSM's)
            st = accumulation_steps(kernel, args, lanes) if steps is not None else None
        if st is not None:
            steps.append(st)
    real_field = elementwise.CompiledProgram._launch_triton
    device._launch = launch
    ntt_triton.module = lambda *a, **kw: _Module()
    if field_programs:              # (CompiledProgram.launch counts around this call itself)
        elementwise.CompiledProgram._launch_triton = lambda self, *a, **kw: None
    try:
        yield
    finally:
        device._launch, ntt_triton.module = real_launch, real_module
        elementwise.CompiledProgram._launch_triton = real_field


def _block() -> int:
    from zktensor.ops.msm import MSMConfig
    return MSMConfig().block


def _yes(flag) -> str:
    return {True: "yes", False: "no"}.get(flag, "")


KINDS = ("field", "ntt", "msm")          # --only's choices, in the file's order


def _kind(row) -> str:
    return "field" if row["op"] == "field_mul" else "msm" if row["op"] == "msm" else "ntt"


def _kept_dates(rows) -> str:
    """When each kind of kept row was counted ("msm rows 2026-...")."""
    kinds = {}
    for r in rows:
        if r.get("counted"):
            kinds.setdefault(_kind(r), set()).add(r["counted"])
    return ", ".join(f"{k} rows {', '.join(sorted(d))}" for k, d in sorted(kinds.items()))


def count(fn) -> dict:
    from zktensor.runtime import counters
    with counters.record() as c:
        fn()
    return c.as_dict()


def msm_counts(group: str, log_n: int, glv: bool = True) -> dict:
    """`zt.msm(..., stats=d)` of 2^log_n bases and full-width scalars (Python ints, < r) on
    the Triton target: d's counts, window and rounds."""
    import numpy as np

    import zktensor as zt
    from zktensor.ops.msm import MSMConfig
    G = zt.group(group)
    n = 1 << log_n
    P = G.generator((n,))
    rng = np.random.default_rng(log_n)
    words = rng.integers(0, 1 << 32, size=(n, G.Fr.limbs), dtype=np.uint64)
    top = G.Fr.p.bit_length() - 32 * (G.Fr.limbs - 1) - 1          # the top word below r's top bit
    words[:, -1] &= (1 << top) - 1
    ks = [int.from_bytes(w.astype("<u4").tobytes(), "little") for w in words]
    from zktensor.ops.msm import device
    st, warm, steps, in_order = {}, {}, [], []
    cfg = MSMConfig(glv=glv)
    device.clear_constants()        # a first call of its shape: it makes the program's small constants
    with zt.config(target="triton"), kernels_not_run(steps, field_programs=True):
        zt.msm(ks, P, cfg, stats=st)
    with zt.config(target="triton"), kernels_not_run(field_programs=True):
        zt.msm(ks, P, cfg, stats=warm)   # a later call: they are kept
    with zt.config(target="triton"), kernels_not_run(in_order, field_programs=True):
        zt.msm(ks, P, MSMConfig(balanced=False, glv=glv))
    return {**{k: st[k] for k in ("launches", "kernels", "syncs", "window", "windows", "rounds", "glv")},
            "launches_warm": warm["launches"],
            "entries": sum(x["entries"] for x in steps), "additions": sum(x["additions"] for x in steps),
            "point_steps": sum(x["steps"] for x in steps),
            "point_steps_per_round": [x["steps"] for x in steps],
            "point_steps_in_order": sum(x["steps"] for x in in_order)}


NTT_OPS = ("ntt", "intt", "coset_ntt", "coset_intt", "intt_to_bitrev", "coset_ntt_from_bitrev")


def ntt_counts(field: str, log_n: int, op: str) -> dict:
    import torch

    import zktensor as zt
    F = zt.field(field)
    x = F.random((1 << log_n,), torch.Generator().manual_seed(1))
    call = {"ntt": lambda: zt.ntt(x), "intt": lambda: zt.intt(x), "coset_ntt": lambda: zt.ntt(x, coset=F.nqr),
            "coset_intt": lambda: zt.intt(x, coset=F.nqr),
            # the prover's pair (`r1cs_to_qap.coefficients`, `coset_evaluations`): no gather
            "intt_to_bitrev": lambda: zt.intt(x, output_order="bitrev"),
            "coset_ntt_from_bitrev": lambda: zt.ntt(x, coset=F.nqr, input_order="bitrev")}[op]
    with zt.config(target="cpu", ntt=zt.NTTConfig(algorithm="stages")):
        call()              # the device tables (twiddles, coset powers) by CPU kernels, not interpreted ones
    with zt.config(target="triton", strategy="int32"), kernels_not_run():
        call()                                  # modules loaded
        return count(call)


def field_counts(field: str, log_n: int) -> dict:
    import torch

    import zktensor as zt
    F = zt.field(field)
    g = torch.Generator().manual_seed(2)
    a, b = F.random((1 << log_n,), g), F.random((1 << log_n,), g)
    with zt.config(target="triton", strategy="int32"):
        a * b
        return count(lambda: a * b)


def proof_counts(fixture: Path) -> list[dict]:
    """Per node of the device graph of a proof of `fixture` (with its witness check; the
    second proof of a Prover, as a service's are): lane, launches, host syncs."""
    import zktensor as zt
    from zktensor.groth16 import key
    from zktensor.groth16.prover import Prover
    from zktensor.groth16.r1cs_to_qap import words_to_limbs
    r1cs = next(iter(sorted(fixture.glob("*.r1cs"))), None)
    real_validate = key._validate
    # the key's validation is the load's work, not the proof's, and its verdict would come
    # from MSM kernels that are not run here: left out (snarkjs made the fixture's key)
    key._validate = lambda *a, **kw: None
    with zt.config(target="triton", strategy="fp64"), kernels_not_run():
        prover = Prover(fixture / "circuit_final.zkey", r1cs=r1cs, device="cpu", helper=False, table_cache=False)
        words, where = prover.witness_words(fixture / "witness.wtns")
        for _ in range(2):          # the second proof's: the first also makes the NTT's tables, once
            g = prover.graph(check=True, where=where)
            run = g.run({"w_std": words_to_limbs(words, "cpu")}, workers=1, device=prover.device, profile=True,
                        keep=["assemble"])
    key._validate = real_validate
    return [{"node": st.name, "lane": st.lane, "critical": st.critical, "launches": st.launches, "syncs": st.syncs}
            for st in sorted(run.stats, key=lambda st: st.start_s)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--msm-groups", default="bn254.g1,bn254.g2,bls12_381.g1,bls12_381.g2,mnt4753.g1")
    ap.add_argument("--msm-log-sizes", default="10,12,14,16,18,20")
    ap.add_argument("--ntt-log-sizes", default="10,12,14,16,18,20")
    ap.add_argument("--proof", default=None, help="a fixture folder: also the device graph of its proof, per node")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu_counts"))
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--no-glv", action="store_true", help="MSMs without the GLV split (MSMConfig(glv=False)), "
                    "for a before/after with --no-save")
    ap.add_argument("--only", choices=KINDS, default=None,
                    help="count only these rows; the others are kept from the file at --out, with its date")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    rows, kept, prev = [], None, {}
    if args.only:
        prev_file = Path(args.out).with_suffix(".json")
        if not prev_file.exists():
            ap.error(f"--only {args.only} keeps the other rows from {prev_file}, which does not exist: "
                     "run without --only first")
        prev = json.loads(prev_file.read_text())
        kept = prev["created"]
        rows = [dict(r, counted=r.get("counted", kept)) for r in prev["rows"]
                if _kind(r) != args.only]

    def add(op, what, log_n, c):
        row = {"op": op, "of": what, "log_n": log_n, **c}
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.only in (None, "field"):
        add("field_mul", "bn254.fr", 10, field_counts("bn254.fr", 10))
    for ln in map(int, args.ntt_log_sizes.split(",")) if args.only in (None, "ntt") else ():
        for op in NTT_OPS:
            add(op, "bn254.fr", ln, ntt_counts("bn254.fr", ln, op))
    for g in args.msm_groups.split(",") if args.only in (None, "msm") else ():
        for ln in map(int, args.msm_log_sizes.split(",")):
            try:
                add("msm", g, ln, msm_counts(g, ln, glv=not args.no_glv))
            except Exception as e:              # noqa: BLE001 - recorded: a group the device MSM refuses
                add("msm", g, ln, {"launches": None, "kernels": None, "syncs": None,
                                   "error": f"{type(e).__name__}: {str(e)[:200]}"})
    # kept unless counted again
    nodes, proof, proof_at = prev.get("proof_nodes", []), prev.get("proof"), prev.get("proof_counted", kept)
    if args.proof:
        nodes, proof, proof_at = proof_counts(Path(args.proof)), Path(args.proof).name, None
        for n in nodes:
            print(json.dumps(n), flush=True)
    if args.no_save:
        return 0
    rows.sort(key=lambda r: KINDS.index(_kind(r)))          # counted or kept, in the file's order
    import torch
    import triton
    doc = {"created": time.strftime("%Y-%m-%dT%H:%M:%S"), "torch": torch.__version__, "triton": triton.__version__,
           "method": "zt.msm(..., stats=d) / runtime.counters on CPU tensors, Triton target, full-width scalars; "
                     "kernels launched and counted, not interpreted; launches = Triton kernels + torch "
                     "operations that compute",
           "rows": rows, "proof": proof, "proof_nodes": nodes}
    doc["proof_counted"] = proof_at or doc["created"]
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(doc, indent=1))
    lines = ["# Launches and host synchronisations per call on the Triton target (counted, no GPU)", "",
             f"{doc['method']}. Made by `python -m bench.gpu_counts` ({doc['created']}, torch {doc['torch']}, "
             f"triton {doc['triton']}). No time was measured."
             + (f" Only the {args.only} rows were counted then; "
                f"the others were kept from earlier runs ({_kept_dates(rows)})." if kept else ""), "",
             "Accumulation: the additions the device MSM's accumulation rounds need (entries after "
             f"each lane's first), and the point formulas their blocks of {_block()} lanes evaluate "
             "(`accumulation_steps`), in all and per round; the last column with the first round's "
             "lanes in bucket order (`MSMConfig(balanced=False)`).", "",
             "GLV: the scalars split into two of half the bits against 2n bases (`MSMConfig.glv`, G1 and G2 of "
             "BN254 and BLS12-381), so half the windows.", "",
             "NTT: natural order in and out unless named; a natural-order result of the passes "
             "(Gentleman-Sande) is one gather more. `intt_to_bitrev` and `coset_ntt_from_bitrev` are the "
             "prover's POLY pair (`r1cs_to_qap.coefficients`, `coset_evaluations`).", "",
             "MSM launches: a process's first call of its shape (it makes the program's small constant "
             "tensors, `ops.msm.device._const`), and in brackets a later call's.", "",
             "| op | of | size | launches | of which Triton kernels | host syncs | window | windows | GLV | rounds "
             "| additions | point formulas (per round) | additions / formulas | formulas, lanes in bucket order |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| {r['op']} | {r['of']} | 2^{r['log_n']} | not run: {r['error'][:90]} | | | | | | | | | | |")
            continue
        acc = ["", "", "", ""]
        if r.get("point_steps"):
            per_round = ", ".join(f"{x:,}" for x in r["point_steps_per_round"])
            acc = [f"{r['additions']:,}", f"{r['point_steps']:,} ({per_round})",
                   f"{r['additions'] / r['point_steps']:.2f}", f"{r['point_steps_in_order']:,}"]
        launches = f"{r['launches']} ({r['launches_warm']})" if r.get("launches_warm") else r["launches"]
        lines.append(f"| {r['op']} | {r['of']} | 2^{r['log_n']} | {launches} | {r['kernels']} | {r['syncs']} "
                     f"| {r.get('window') or ''} | {r.get('windows') or ''} | {_yes(r.get('glv'))} "
                     f"| {r.get('rounds') or ''} | " + " | ".join(acc) + " |")
    if nodes:
        lines += ["", f"## The device graph of a proof ({doc['proof']}, with its witness check; fp64; "
                  f"counted {doc['proof_counted']})", "",
                  "The second proof of a Prover. MSM and NTT kernels counted, not run; the elementwise and "
                  "sparse-product kernels interpreted. "
                  "* = the critical path.", "",
                  "| node | lane | launches | host syncs |", "|---|---|---|---|"]
        for n in nodes:
            lines.append(f"| {n['node']}{' *' if n['critical'] else ''} | {n['lane']} | {n['launches']} | {n['syncs']} |")
        lines.append(f"| all | | {sum(n['launches'] or 0 for n in nodes)} | {sum(n['syncs'] or 0 for n in nodes)} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"saved {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
