"""Summarise everything in ``bench/results/`` into ``REPORT.md`` and plots.

Reads every results JSON written by :func:`bench.common.write_results`
(``bench/results/*.json`` and ``bench/results/gpu/*.json``), groups rows by op
group (:func:`bench.common.op_group`: ``fr_mul``, ``g1_msm``, ``fr_fft``, ...)
and curve/field, and writes

* ``REPORT.md``: one Markdown table per (op group, curve): every system,
  strategy and target, with the speed ratio to gnark-crypto, arkworks (and
  snarkjs for proofs) where the rule below allows one;
* ``plots/<group>_<curve>.png``: median time against size on log-log axes,
  one line per system/op/strategy/target/threads (throughput bars for the
  field-multiplication groups, whose "size" is only a repetition count), and
  beside it how many times faster each zktensor series is than each peer at
  each size (log axes; the table's ``× vs peer`` figures);
* a "Tuned configurations" table when ``<results>/tune.json`` (a tuning cache
  written by ``zktensor autotune``) is present.

Ratios are "times faster than the peer": peer median / row median for the
same size (rate / peer rate for multiplication groups), so > 1 means the row
is faster.  A ratio is printed only against a peer row of the **same run**
(same results file, same machine, same ``run`` id: see
:func:`bench.common.write_results`), with the same thread count (GPU rows: the
run's largest), when **both** rows are undisturbed (:func:`disturbance`).
Every other row is context: its figures are listed, without a ratio, and the
cell says why (``other run``, ``disturbed``, ``unchecked``, ...).  The peer
row used: for multiplication the peer's fastest throughput form (a ``*_chain``
row: the peer's chain); otherwise the op with the same name if the peer has
one, else the group's reference op (see ``REFERENCE_OPS``); zktensor field
names (``mul_array`` on ``bn254.fr``) are read as the peers'
(``fr_mul_array`` on ``bn254``).

Usage::

    python -m bench.report [--results DIR] [--out REPORT.md] [--plots DIR]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import math
import os
import re
import sys
from collections import OrderedDict, defaultdict
from pathlib import Path
from typing import Sequence

try:
    from bench.common import (
        default_results_dir, fmt_rate, fmt_size, fmt_time, is_gpu_target, load_all_results,
        machine_key, machine_summary, op_group,
    )
except ImportError:  # run as ``python bench/report.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench.common import (
        default_results_dir, fmt_rate, fmt_size, fmt_time, is_gpu_target, load_all_results,
        machine_key, machine_summary, op_group,
    )

PEER_SYSTEMS = ("gnark-crypto", "arkworks", "snarkjs", "rapidsnark")

#: Groups whose ``size`` is a repetition count, compared by throughput.
RATE_GROUPS = {"fr_mul", "fq_mul", "fr_add", "fq_add"}

#: Peer ops a row is compared with when the peer has no op of the same name
#: (the fastest of those present is used).  Multiplication: the throughput
#: (array/vector) forms, not the latency-bound dependent chain; FFT: the
#: natural-order output forms (gnark DIF + BitReverse, arkworks fft_in_place).
REFERENCE_OPS = {
    "fr_mul": ("fr_mul_vector", "fr_mul_array"),
    "fq_mul": ("fq_mul_array", "fq_mul_chain"),
    "fr_fft": ("fr_fft_dif_bitrev", "fr_fft_in_place"),
    "g1_msm": ("g1_msm",),
    "groth16_prove": ("groth16_prove_cli",),      # not the peer's rows taken in turns with one zktensor row
}

#: Op-name words that mark a workload no peer program measures (sparse scalars: an
#: easier input than the peers' random ones), so no ratio is honest.
OTHER_WORKLOAD = ("sparse",)

GROUP_TITLES = {
    "fr_mul": "scalar-field (Fr) multiplication",
    "fq_mul": "base-field (Fq) multiplication",
    "fr_add": "scalar-field (Fr) addition",
    "fq_add": "base-field (Fq) addition",
    "fr_fft": "Fr FFT / NTT",
    "fr_ntt": "Fr NTT",
    "g1_msm": "G1 multi-scalar multiplication",
    "g2_msm": "G2 multi-scalar multiplication",
    "groth16_prove": "Groth16 proof",
    "interpreter_start": "Python start-up and exit (the floor under the Python client's time)",
}

GROUP_ORDER = ("fr_mul", "fq_mul", "fr_add", "fq_add", "fr_fft", "fr_ntt", "g1_msm", "g2_msm", "groth16_prove",
               "interpreter_start")

SYSTEM_ORDER = {"zktensor": 0, "gnark-crypto": 1, "arkworks": 2}


# ---------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------


def _flatten(docs: Sequence[dict], base: Path) -> tuple[list[dict], "OrderedDict[str, dict]"]:
    """Rows annotated with their file, creation date and machine tag."""
    machines: "OrderedDict[str, dict]" = OrderedDict()
    rows = []
    for doc in docs:
        m = doc.get("machine") or {}
        key = machine_key(m)
        if key not in machines:
            machines[key] = {"tag": f"M{len(machines) + 1}", "machine": m, "files": []}
        try:
            rel = str(Path(doc["path"]).relative_to(base))
        except ValueError:
            rel = doc["path"]
        machines[key]["files"].append(rel)
        for r in doc["rows"]:
            try:
                med = float(r["median_s"])
                size = int(r["size"])
            except (KeyError, TypeError, ValueError):
                continue
            row = dict(r)
            row["median_s"] = med
            row["min_s"] = float(r.get("min_s") or med)
            row["size"] = size
            row["threads"] = int(r.get("threads") or 1)
            row["strategy"] = r.get("strategy") or ""
            row["target"] = r.get("target") or "cpu"
            row["_op"], row["_curve"] = canonical_op_curve(str(r["op"]), str(r.get("field_or_curve", "")))
            row["_group"] = op_group(row["_op"])
            row["_machine"] = key
            row["_tag"] = machines[key]["tag"]
            row["_file"] = rel
            row["_created"] = doc.get("created", "")
            row["_run"] = (key, rel, str(r.get("run") or r.get("measured") or doc.get("created", "")))
            if row.get("unit_value") in (None, "") and med > 0:
                row["unit_value"] = size / med
            rows.append(row)
    runs: dict[tuple, str] = {}
    for row in rows:
        row["_run_tag"] = runs.setdefault(row["_run"], f"R{len(runs) + 1}")
    return rows, machines


# ---------------------------------------------------------------------------
# Ratios
# ---------------------------------------------------------------------------


def _rate(row: dict) -> float:
    v = row.get("unit_value")
    return float(v) if v not in (None, "") else row["size"] / row["median_s"]


#: Curve names as the peers write them.
CURVE_ALIASES = {"bls12_381": "bls12-381", "bls12381": "bls12-381", "mnt4753": "mnt4-753", "bn256": "bn254"}


def canonical_op_curve(op: str, field_or_curve: str) -> tuple[str, str]:
    """Map a row's op and field/curve onto the peers' naming: a field given as
    ``<curve>.<fr|fq>`` (zktensor's field names, e.g. ``bn254.fr``) with an op
    lacking the ``fr_``/``fq_`` prefix becomes ``fr_<op>`` on ``<curve>``
    (``mul_array`` on ``bn254.fr`` -> ``fr_mul_array`` on ``bn254``); curve
    spellings as in ``CURVE_ALIASES``."""
    curve, _, fld = field_or_curve.partition(".")
    if fld in ("fr", "fq"):
        if not op.startswith(("fr_", "fq_")):
            op = f"{fld}_{op}"
    else:  # no sub-field, or one we do not know: keep the whole name
        curve = field_or_curve
    return op, CURVE_ALIASES.get(curve, curve)


_CLEAN_RE = re.compile(r"clean (\d+)/(\d+) runs")
_CLEAN_KEY_RE = re.compile(r"^(\d+)/(\d+)$")


def clean_runs(row: dict) -> tuple[int, int] | None:
    """(k, n): k of the n timed runs were undisturbed by other processes, from the
    ``clean k/n runs`` note in ``extra`` (or an ``extra`` dict's ``"clean": "k/n"``);
    None when the row does not say."""
    extra = row.get("extra")
    if isinstance(extra, dict):
        m = _CLEAN_KEY_RE.match(str(extra.get("clean", "")))
        if m:
            return int(m[1]), int(m[2])
    m = _CLEAN_RE.search(str(extra or ""))
    return (int(m[1]), int(m[2])) if m else None


def disturbance(row: dict) -> str:
    """``undisturbed``: at least one timed run, and at least half of those tried, were
    undisturbed (the machine was mostly quiet while the row was measured);
    ``disturbed``: otherwise; ``unchecked``: the row records no per-run check."""
    kn = clean_runs(row)
    if kn is None:
        return "unchecked"
    k, n = kn
    return "undisturbed" if k >= 1 and 2 * k >= n else "disturbed"


def find_reference(row: dict, rows: Sequence[dict], peer: str) -> tuple[dict | None, str]:
    """The peer row to compare ``row`` with, or None and why not.

    Only a row of the same run (machine, file, run id) with the same thread count
    (GPU rows: the run's largest peer thread count) qualifies, and only when both
    rows are undisturbed.  Reasons: ``no peer`` (no row of that peer, op group,
    curve, size and circuit anywhere), ``other run``, ``other threads``, ``peer disturbed``,
    ``peer unchecked``, ``disturbed`` / ``unchecked`` (the row itself), ``other workload``
    (``OTHER_WORKLOAD``)."""
    group, rate = row["_group"], row["_group"] in RATE_GROUPS
    if any(w in row["_op"].split("_") for w in OTHER_WORKLOAD):
        return None, "other workload"
    cands = [
        r for r in rows
        if r["system"] == peer and r["_group"] == group and r["_curve"] == row["_curve"]
        and (rate or r["size"] == row["size"]) and r.get("circuit") == row.get("circuit")
    ]
    if not cands:
        return None, "no peer"
    if rate:
        # throughput: a dependent chain is compared with chains, anything else
        # with the peer's fastest throughput form (e.g. gnark's Vector.Mul)
        if "chain" in row["_op"]:
            pick = [r for r in cands if "chain" in r["_op"]]
        else:
            pick = [r for r in cands if r["_op"] in REFERENCE_OPS.get(group, ())]
    else:
        pick = [r for r in cands if r["_op"] == row["_op"]] or \
            [r for r in cands if r["_op"] in REFERENCE_OPS.get(group, ())]
    if pick:
        cands = pick
    cands = [r for r in cands if r["_run"] == row["_run"]]
    if not cands:
        return None, "other run"
    if is_gpu_target(row["target"]):
        top = max(r["threads"] for r in cands)
        cands = [r for r in cands if r["threads"] == top]
    else:
        cands = [r for r in cands if r["threads"] == row["threads"]]
        if not cands:
            return None, "other threads"
    own = disturbance(row)
    if own != "undisturbed":
        return None, own
    quiet = [r for r in cands if disturbance(r) == "undisturbed"]
    if not quiet:
        return None, "peer " + ("unchecked" if all(disturbance(r) == "unchecked" for r in cands) else "disturbed")
    best = max(quiet, key=_rate) if rate else min(quiet, key=lambda r: r["median_s"])
    return best, ""


def speed_ratio(row: dict, ref: dict) -> float:
    """How many times faster ``row`` is than ``ref`` (> 1: row is faster)."""
    if row["_group"] in RATE_GROUPS:
        return _rate(row) / _rate(ref)
    return ref["median_s"] / row["median_s"]


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


def _sort_key(r: dict):
    return (
        r["size"] if r["_group"] not in RATE_GROUPS else 0,
        SYSTEM_ORDER.get(r["system"], 0 if r["system"].startswith("zktensor") else 3),
        r["system"], r["op"], r["strategy"], r["target"], r["threads"], r["_tag"],
    )


def _groups(rows: Sequence[dict]) -> "OrderedDict[tuple[str, str], list[dict]]":
    g: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        g[(r["_group"], r["_curve"])].append(r)

    def order(k):
        grp, curve = k
        return (GROUP_ORDER.index(grp) if grp in GROUP_ORDER else len(GROUP_ORDER), grp, curve)

    return OrderedDict((k, sorted(g[k], key=_sort_key)) for k in sorted(g, key=order))


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s).strip("_") or "x"


def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _runs_cell(r: dict) -> str:
    """'k/n' clean runs, with ``⚠`` when the row is disturbed; '—' when it records none."""
    kn = clean_runs(r)
    if kn is None:
        return "—"
    return f"{kn[0]}/{kn[1]}" + ("" if disturbance(r) == "undisturbed" else " ⚠")


def group_table(rows: Sequence[dict], all_rows: Sequence[dict], *, show_machine: bool) -> list[str]:
    """Markdown lines of one group's table."""
    group = rows[0]["_group"]
    rate = group in RATE_GROUPS
    unit = next((r.get("unit") for r in rows if r.get("unit")), "items/s")
    head = ["system", "op", "strategy", "target", "threads", "size", "median", "min",
            unit if not rate else f"{unit} (median)"]
    if rate:
        head.insert(8, "per item (median)")
    # the peers this group has (snarkjs for Groth16), else the two CPU libraries (n/a cells)
    peers = [p for p in PEER_SYSTEMS if any(r["system"] == p and r["_group"] == group for r in all_rows)] \
        or list(PEER_SYSTEMS[:2])
    head += ["clean runs", "run"] + [f"× vs {p}" for p in peers]
    if show_machine:
        head.append("machine")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [
            r["system"] + (f" {r['version']}" if r.get("version") else ""),
            r["op"] + (f" ({r['circuit']})" if r.get("circuit") else ""), r["strategy"] or "—", r["target"],
            str(r["threads"]), fmt_size(r["size"]),
            fmt_time(r["median_s"]), fmt_time(r["min_s"]),
        ]
        if rate:
            cells.append(fmt_time(r["median_s"] / r["size"]))
        cells += [fmt_rate(_rate(r)), _runs_cell(r), r["_run_tag"]]
        for peer in peers:
            if r["system"] == peer:
                cells.append("—")
                continue
            ref, why = find_reference(r, all_rows, peer)
            if ref is None:
                cells.append(f"— ({why})")
            else:
                cells.append(f"{speed_ratio(r, ref):.2f} ({ref['op']})" if ref["op"] != r["op"]
                             else f"{speed_ratio(r, ref):.2f}")
        if show_machine:
            cells.append(r["_tag"])
        lines.append("| " + " | ".join(_md_escape(c) for c in cells) + " |")
    return lines


# ---------------------------------------------------------------------------
# Plots
# ---------------------------------------------------------------------------


def _series_label(r: dict, show_machine: bool) -> str:
    parts = [r["system"], r["op"]]
    if r["strategy"]:
        parts.append(r["strategy"])
    if r["target"] != "cpu":
        parts.append(r["target"])
    parts.append(f"{r['threads']}t")
    if show_machine:
        parts.append(r["_tag"])
    return " ".join(parts)


def speedup_series(rows: Sequence[dict], all_rows: Sequence[dict], *,
                   show_machine: bool) -> "OrderedDict[tuple[str, str], list[tuple[int, float]]]":
    """For every non-peer series and every peer: (size, × faster than the peer) points,
    the same comparison as the table's `× vs peer` columns. Keys: (series label, peer)."""
    out: "OrderedDict[tuple[str, str], list[tuple[int, float]]]" = OrderedDict()
    for r in sorted(rows, key=lambda r: r["size"]):
        if r["system"] in PEER_SYSTEMS:
            continue
        for peer in PEER_SYSTEMS:
            ref, _why = find_reference(r, all_rows, peer)
            if ref is not None:
                out.setdefault((_series_label(r, show_machine), peer), []).append((r["size"], speed_ratio(r, ref)))
    return out


def plot_group(rows: Sequence[dict], path: Path, title: str, *, show_machine: bool,
               all_rows: Sequence[dict] | None = None) -> Path:
    """One PNG per group: median time against size on log-log axes (throughput bars for
    multiplication), and beside it, when the group has zktensor and peer rows, how many
    times faster each zktensor series is than each peer at each size (log axes, 1 = parity)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    group = rows[0]["_group"]
    _color_state.clear()  # same colours for the same systems in every plot
    # a series measured at the same size in several results files (e.g. peers re-measured
    # beside zktensor in bench/ntt.py) becomes one series per file, not a zigzag
    files_at: dict = defaultdict(set)
    for r in rows:
        files_at[(_series_label(r, show_machine), r["size"])].add(r["_file"])
    split = {lab for (lab, _), fs in files_at.items() if len(fs) > 1}
    series: "OrderedDict[str, list[dict]]" = OrderedDict()
    for r in rows:
        lab = _series_label(r, show_machine)
        if lab in split:
            lab += f" [{Path(r['_file']).stem}]"
        series.setdefault(lab, []).append(r)

    if group in RATE_GROUPS:
        labels, values, colors = [], [], []
        unit = next((r.get("unit") for r in rows if r.get("unit")), "items/s")
        for lab, rs in series.items():
            for r in sorted(rs, key=lambda r: r["size"]):
                labels.append(lab if len(rs) == 1 else f"{lab} n={fmt_size(r['size'])}")
                values.append(_rate(r) / 1e6)
                colors.append(_color(r["system"]))
        fig, ax = plt.subplots(figsize=(9, 0.42 * len(labels) + 1.6))
        y = range(len(labels))
        ax.barh(list(y), values, color=colors)
        ax.set_yticks(list(y), labels, fontsize=8)
        ax.invert_yaxis()
        for yi, v in zip(y, values):
            ax.text(v, yi, f" {v:.3g}", va="center", fontsize=8)
        ax.set_xlabel(f"M{unit} (median; higher is better)")
        ax.set_xlim(0, max(values) * 1.18 if values else 1)
        ax.grid(axis="x", alpha=0.3)
        ax.set_title(title, fontsize=11)
    else:
        speed = speedup_series(rows, all_rows if all_rows is not None else rows, show_machine=show_machine)
        if speed:
            fig, (ax, ax2) = plt.subplots(1, 2, figsize=(15, 5.5), gridspec_kw={"width_ratios": [3, 2]})
        else:
            fig, ax = plt.subplots(figsize=(9, 5.5))
        markers = "osD^vP*Xh<>"
        colors: dict[str, str] = {}
        for i, (lab, rs) in enumerate(series.items()):
            rs = sorted(rs, key=lambda r: r["size"])
            xs = [r["size"] for r in rs]
            ys = [r["median_s"] for r in rs]
            is_peer = rs[0]["system"] in PEER_SYSTEMS
            colors[lab] = _color(rs[0]["system"])
            ax.plot(xs, ys, marker=markers[i % len(markers)], linestyle="--" if is_peer else "-",
                    color=colors[lab], label=lab, linewidth=1.4, markersize=5,
                    alpha=0.85 if is_peer else 1.0)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("size (elements / points)")
        ax.set_ylabel("median time (s; lower is better)")
        ax.grid(True, which="both", alpha=0.25)
        ax.set_title(title, fontsize=11)
        ax.legend(fontsize=7, loc="upper left", framealpha=0.85)
        if speed:
            style = {"gnark-crypto": ("-", "o"), "arkworks": ("--", "s")}
            for (lab, peer), pts in speed.items():
                ls, mk = style.get(peer, (":", "^"))
                ax2.plot([x for x, _ in pts], [y for _, y in pts], marker=mk, linestyle=ls,
                         color=colors.get(lab, "#1f77b4"), label=f"{lab} vs {peer}", linewidth=1.4, markersize=5)
            ax2.axhline(1.0, color="black", linewidth=0.8, linestyle=":")
            ax2.set_xscale("log", base=2)
            from matplotlib.ticker import FuncFormatter
            ys = [y for pts in speed.values() for _, y in pts] + [1.0]
            if max(ys) / min(ys) >= 8:       # log axis for wide spreads, else linear (readable ticks)
                ax2.set_yscale("log")
                ax2.yaxis.set_minor_formatter(FuncFormatter(
                    lambda v, _: f"{v:g}×" if v > 0 and round(v / 10 ** math.floor(math.log10(v))) in (2, 5) else ""))
            else:
                ax2.set_ylim(0, max(ys) * 1.1)
            ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
            ax2.set_xlabel("size (elements / points)")
            ax2.set_ylabel("× faster than the peer (> 1: zktensor faster)")
            ax2.grid(True, which="both", alpha=0.25)
            ax2.set_title("zktensor against each peer", fontsize=11)
            ax2.legend(fontsize=7, loc="best", framealpha=0.85)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


_PALETTE = ["#1f77b4", "#9467bd", "#17becf", "#8c564b", "#e377c2", "#bcbd22", "#7f7f7f", "#393b79", "#637939"]
_SYSTEM_COLORS = {"gnark-crypto": ["#2ca02c", "#98df8a", "#006d2c"], "arkworks": ["#d62728", "#ff9896", "#ff7f0e"]}
_color_state: dict[str, int] = defaultdict(int)


def _color(system: str) -> str:
    """Peers in shades of green (gnark-crypto) and red (arkworks), zktensor
    and others from a blue/purple palette; successive series get the next shade."""
    pal = _SYSTEM_COLORS.get(system, _PALETTE)
    key = system if system in _SYSTEM_COLORS else "_other"
    k = _color_state[key]
    _color_state[key] += 1
    return pal[k % len(pal)]


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------


def generate_report(
    results_dir: str | os.PathLike | None = None,
    out_path: str | os.PathLike | None = None,
    plots_dir: str | os.PathLike | None = None,
    *,
    plots: bool = True,
) -> Path:
    """Write the Markdown report (default ``<results_dir>/REPORT.md``) and
    plots (default ``<results_dir>/plots/``); return the report's path."""
    base = Path(results_dir) if results_dir is not None else default_results_dir()
    out = Path(out_path) if out_path is not None else base / "REPORT.md"
    pdir = Path(plots_dir) if plots_dir is not None else base / "plots"
    # this machine's files first, then gpu/ (machine tags follow this order)
    # files without timed rows (ntt_aot.json, gpu_counts.json: other tools' reports kept
    # beside the results) are not benchmark runs
    docs = sorted((d for d in load_all_results(base)
                   if any(isinstance(r, dict) and "median_s" in r and "size" in r for r in d["rows"])),
                  key=lambda d: (Path(d["path"]).parent != base, d["path"]))
    rows, machines = _flatten(docs, base)
    show_machine = len(machines) > 1
    _color_state.clear()

    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    L = [
        "# zktensor benchmark report",
        "",
        f"Generated {now} by `python -m bench.report` from {len(docs)} results file(s), {len(rows)} rows.",
        "",
        "Times are the median (upper median) and minimum of the clean timed runs after one warm-up "
        "(a run is discarded when other processes used more than 3% of the cores during it). "
        "`× vs peer` = how many times faster the row is than the peer (peer median / row median at the "
        "same size; throughput ratio for multiplication); > 1 means faster; an op name in brackets is the "
        "peer op compared with when it differs from the row's. "
        "A ratio is given only against a peer row of the same run (`run`: one results file, one machine, "
        "one invocation) with the same thread count, and only when both rows are undisturbed: at least one "
        "and at least half of their timed runs clean. Every other figure is context, and its cell says why "
        "there is no ratio: `no peer` (no peer row at that size), `other run`, `other threads`, "
        "`other workload` (e.g. sparse scalars, which no peer program measures), "
        "`disturbed` / `peer disturbed`, `unchecked` / `peer unchecked` (the row records no per-run check). "
        "`clean runs` k/n: k undisturbed runs of n tried; `⚠` fewer than half (the row is disturbed). "
        "The disturbance test allows at least 20 ms of other processes' CPU per run (/proc/stat counts 10 ms "
        "ticks), so it cannot see disturbance of runs shorter than about 0.33 s on 2 cores.",
        "",
        "## Machines and files",
        "",
        "| tag | machine | files | date | commit |",
        "|---|---|---|---|---|",
    ]
    for key, info in machines.items():
        m = info["machine"]
        commit = (m.get("git_commit") or "")[:10] + (" (dirty)" if m.get("git_dirty") else "")
        L.append(
            f"| {info['tag']} | {_md_escape(key)} — {_md_escape(machine_summary(m))} | "
            f"{', '.join(info['files'])} | {str(m.get('date', ''))[:10]} | {commit or '—'} |"
        )
    L.append("")
    L += runs_section(rows, machines)
    noted = [(Path(d["path"]), d.get("notes")) for d in docs if d.get("notes")]
    if noted:
        L += ["Notes:", ""]
        for path, note in noted:
            try:
                rel = path.relative_to(base)
            except ValueError:
                rel = path
            L.append(f"- `{rel}`: {_md_escape(note)}")
        L.append("")
    if not rows:
        L += ["No results yet.", ""]

    for (group, curve), grows in _groups(rows).items():
        title = f"{group} — {curve}" if curve else group
        desc = GROUP_TITLES.get(group)
        L += [f"## {title}" + (f" ({desc})" if desc else ""), ""]
        L += group_table(grows, rows, show_machine=show_machine)
        L.append("")
        refs = REFERENCE_OPS.get(group)
        if refs:
            L += [f"Default peer reference ops: {', '.join('`' + r + '`' for r in refs)} (fastest present).", ""]
        if plots:
            name = f"{_slug(group)}_{_slug(curve)}.png"
            kind = "throughput" if group in RATE_GROUPS else "median time vs size"
            plot_group(grows, pdir / name, f"{title}: {kind}", show_machine=show_machine, all_rows=rows)
            rel = os.path.relpath(pdir / name, out.parent)
            L += [f"![{title}]({rel})", ""]

    L += tuning_section(base)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(L))
    return out


def runs_section(rows: Sequence[dict], machines: "OrderedDict[str, dict]") -> list[str]:
    """A table of the runs (``run`` column of the group tables): file, machine, when, and
    how many rows were undisturbed."""
    runs: "OrderedDict[str, list[dict]]" = OrderedDict()
    for r in rows:
        runs.setdefault(r["_run_tag"], []).append(r)
    if not runs:
        return []
    L = ["## Runs", "", "| run | file | machine | run id | rows | undisturbed | disturbed | unchecked |",
         "|---|---|---|---|---|---|---|---|"]
    for tag, rs in runs.items():
        key, rel, run_id = rs[0]["_run"]
        count = {s: sum(disturbance(r) == s for r in rs) for s in ("undisturbed", "disturbed", "unchecked")}
        L.append(f"| {tag} | {_md_escape(rel)} | {machines[key]['tag']} | {_md_escape(run_id)} | {len(rs)} | "
                 f"{count['undisturbed']} | {count['disturbed']} | {count['unchecked']} |")
    L.append("")
    return L


def tuning_section(base: Path) -> list[str]:
    """A table of the tuned configurations in ``<results>/tune.json`` (a copy of the
    tuning cache that ``zktensor autotune`` wrote, e.g. with
    ``ZKTENSOR_TUNE_CACHE=bench/results/tune.json``), or nothing without one."""
    import json

    path = base / "tune.json"
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_text())
        entries = sorted(doc["entries"].values(),
                         key=lambda e: (e["device"], e["op"], e["field"], int(e["bucket"])))
    except (OSError, ValueError, KeyError, TypeError) as e:
        return ["## Tuned configurations", "", f"`tune.json` could not be read: {_md_escape(e)}", ""]
    L = ["## Tuned configurations", "",
         f"Winners of `zktensor autotune` (zktensor {_md_escape(doc.get('zktensor_version', '?'))}), from "
         "`tune.json`: every candidate was checked against a reference before it was timed; `default` is the "
         "cost model's configuration measured in the same run.", "",
         "| device | op | field | size | config | time | default | × | candidates (rejected) |",
         "|---|---|---|---|---|---|---|---|---|"]
    for e in entries:
        t, d = e.get("time_s"), e.get("default_time_s")
        cfg = ", ".join(f"{k}={v}" for k, v in (e.get("config") or {}).items())
        ratio = f"{d / t:.2f}" if t and d else "—"
        state = "" if e.get("complete") else " (partial)"
        L.append(f"| {_md_escape(e['device'])} | {_md_escape(e['op'])} | {_md_escape(e['field'])} | "
                 f"{fmt_size(int(e['bucket']))} | {_md_escape(cfg)} | {fmt_time(t) if t else '—'} | "
                 f"{fmt_time(d) if d else '—'} | {ratio} | {len(e.get('measured') or {})} "
                 f"({len(e.get('rejected') or {})}){state} |")
    L.append("")
    return L


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write bench/results/REPORT.md and plots")
    ap.add_argument("--results", default=None, help="results directory (default bench/results)")
    ap.add_argument("--out", default=None, help="report path (default <results>/REPORT.md)")
    ap.add_argument("--plots", default=None, help="plots directory (default <results>/plots)")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    path = generate_report(args.results, args.out, args.plots, plots=not args.no_plots)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
