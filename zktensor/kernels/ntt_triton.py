"""Triton NTT kernels: GZKP shuffle-less batched passes over limb tensors.

A radix-2 NTT of N = 2^n points is n stages; the kernels run them in passes
of up to B stages (GZKP §4.1, "shuffle-less"). One program of a pass owns
G independent groups of 2^B elements that are 2^B rows at stride S apart
(S = the half-size of the pass's last DIF stage): it loads each row's G
group members as one coarse contiguous chunk (coalesced), builds the
butterfly pattern of each stage inside the program (reshape / permute /
split / join of its register tile, which Triton lowers to shared-memory
exchanges), and writes the tile back to the same places. Nothing is
shuffled in global memory between passes. When S < G, a program takes G/S
consecutive blocks of S columns instead, so loads stay contiguous.

In the words of four-step (Bailey; PipeZK, SZKP): the first pass is the
column NTTs of the N/2^B x 2^B view, with the inter-step twiddle scaling
fused into its butterflies (the stage twiddles w_2H^j of one big transform
carry it), the later passes are the row NTTs; the transposes are the
load/store indexing. A batch of polynomials (contiguous rows of one tensor)
is one flat array to the passes: no stage with H <= N/2 crosses a row.

Twiddles are one stage-major table per (field, N, direction):
tw[H - 1 + j] = w_2H^j, so the G lanes of a program read contiguous words
(the order programs read them). Element-wise epilogues are fused: the first
pass multiplies by a prescale table (coset powers g^j), the last by a
postscale (N^-1 and g^-j for the inverse), in registers.

The field arithmetic is generated: the butterflies `(u+v, (u-v)·w)` (DIF,
natural-order input) and `(u+v·w, u-v·w)` (DIT, bit-reversed input) and the
scaling product are traced and compiled by the pass pipeline for the Triton
target; this module only appends kernel templates that call their device
functions (`bf_dif_k0_fn`, ...) to that generated source. A DIF leaves its
output bit-reversed and a DIT takes its input so: asking a DIF for natural order
(or a DIT for bit-reversed order) costs one gather pass (torch index_select), which
the prover's pair avoids (`groth16.r1cs_to_qap.coefficients`).

Order in this file: kernel template, host wrapper, reference.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from ..passes.limbs_to_triton import HEADER, kernels_of
from ..runtime import counters
from ..runtime.triton_modules import loaded_module, triton_mode
from .elementwise import get_program
from .ntt_plan import BF_DIF, BF_DIT, SCALE, bitrev_index, tables

# =============================================================================
# Kernel template
# =============================================================================
TEMPLATE = '''

@triton.jit
def ntt_stage($XS, tw, tw_ls, S, cc0, c, Q: tl.constexpr, R: tl.constexpr, C: tl.constexpr,
              H: tl.constexpr, M: tl.constexpr, DIT: tl.constexpr):
    """One radix-2 stage on the [Q, R, C] tile: rows r and r + H (r mod 2H < H)
    are paired inside the program; twiddle w_{2H·S}^(k·S + column), k = r mod H."""
    k = tl.arange(0, H)
    toff = (H * S - 1) + (k * S)[None, :, None] + (cc0[:, None] + c[None, :])[:, None, :]
    toff = tl.broadcast_to(toff[:, None, :, :], [Q, M, H, C])
$SPLIT
$TW
    if DIT:
$BF_DIT
    else:
$BF_DIF
$JOIN
    return $XS


@triton.jit
def ntt_pass(src, dst, tw, pre, post, ls, tw_ls, pre_ls, post_ls, n_mask, S, nb,
             R: tl.constexpr, LOG_R: tl.constexpr, C: tl.constexpr, Q: tl.constexpr,
             DIT: tl.constexpr, PRE: tl.constexpr, POST: tl.constexpr):
    """LOG_R radix-2 stages on a [Q, R, C] tile: Q blocks x R rows (stride S)
    x C contiguous columns. PRE/POST: 0 none, 1 a table indexed by the
    position in the polynomial (offs & n_mask), 2 one constant (entry 0)."""
    t = tl.program_id(0)
    q = tl.arange(0, Q)
    r = tl.arange(0, R)
    c = tl.arange(0, C)
    u = t * Q + q
    blk = (u // nb).to(tl.int64)
    cc0 = (u % nb) * C
    offs = (blk * R * S + cc0)[:, None, None] + (r * S)[None, :, None] + c[None, None, :]
$LOAD
    if PRE == 1:
        pofs = offs & n_mask
$PRE_TABLE
$PRE_MUL
    if PRE == 2:
$PRE_CONST
$PRE_MUL
    if DIT:
        for s in tl.static_range(LOG_R):
            $XS = ntt_stage($XS, tw, tw_ls, S, cc0, c, Q, R, C, 1 << s, R // (2 << s), DIT)
    else:
        for s in tl.static_range(LOG_R):
            $XS = ntt_stage($XS, tw, tw_ls, S, cc0, c, Q, R, C, 1 << (LOG_R - 1 - s),
                            R // (2 << (LOG_R - 1 - s)), DIT)
    if POST == 1:
        pofs = offs & n_mask
$POST_TABLE
$POST_MUL
    if POST == 2:
$POST_CONST
$POST_MUL
$STORE
'''


def _split_words(t: str, words: list, shape: str, names: dict, lines: list, tag: str):
    """Code splitting tensor `t` of shape [shape..., len(words)] (words along the
    last dim) into one tensor per word: a tree of reshape + split."""
    k = len(words)
    if k == 2:
        a, b = names.setdefault(words[0], f"{tag}{words[0]}"), names.setdefault(words[1], f"{tag}{words[1]}")
        lines.append(f"{a}, {b} = tl.split({t})")
        return
    e, o = f"{t}e", f"{t}o"
    lines.append(f"{e}, {o} = tl.split(tl.reshape({t}, [{shape}, {k // 2}, 2]))")
    _split_words(e, words[0::2], shape, names, lines, tag)
    _split_words(o, words[1::2], shape, names, lines, tag)


def _join_words(words: list, names: dict, shape: str, lines: list, tmp: str) -> str:
    """Code joining one tensor per word into [shape..., len(words)]; returns its name."""
    k = len(words)
    if k == 2:
        lines.append(f"{tmp} = tl.join({names[words[0]]}, {names[words[1]]})")
        return tmp
    e = _join_words(words[0::2], names, shape, lines, tmp + "e")
    o = _join_words(words[1::2], names, shape, lines, tmp + "o")
    lines.append(f"{tmp} = tl.reshape(tl.join({e}, {o}), [{shape}, {k}])")
    return tmp


def _template(L: int) -> str:
    """The kernel for L storage words per element. Every tile is loaded and
    stored with one memory op over a [..., LP] tensor (LP = L rounded up to a
    power of two, masked), then split into per-word tensors: few memory ops
    keep Triton's coalescing analysis (quadratic in them) fast."""
    LP = 1 << (L - 1).bit_length()
    xs = [f"x{j}" for j in range(L)]
    ind = lambda n, lines: "\n".join(" " * n + s for s in lines)  # noqa: E731
    masked = LP != L

    def load(ptr, ls, offs, shape, tag, dims):
        """Load words [0, L) at ptr + j·ls + offs (offs of rank dims) into {tag}j."""
        lines = [f"jj = tl.arange(0, {LP})",
                 f"o4 = {offs}[{', '.join([':'] * dims)}, None] + (jj * {ls})[{', '.join(['None'] * dims)}, :]"]
        mask = f", mask=(jj < {L})[{', '.join(['None'] * dims)}, :]" if masked else ""
        lines.append(f"{tag}all = tl.load({ptr} + o4{mask}).to(tl.uint32, bitcast=True)")
        names = {}
        _split_words(f"{tag}all", list(range(LP)), shape, names, lines, tag)
        return lines

    def const(name):
        return [f"p{j} = tl.load({name} + {j} * {name}_ls).to(tl.uint32, bitcast=True)" for j in range(L)]

    xp = ", ".join(xs + [f"p{j}" for j in range(L)])
    mul = [f"{', '.join(xs)} = scale_k0_fn({xp})"]
    split = [f"a{j}, b{j} = tl.split(tl.permute(tl.reshape(x{j}, [Q, M, 2, H, C]), [0, 1, 3, 4, 2]))"
             for j in range(L)]
    tw = load("tw", "tw_ls", "toff", "Q, M, H, C", "w", 4)
    args = ", ".join([f"a{j}" for j in range(L)] + [f"b{j}" for j in range(L)] + [f"w{j}" for j in range(L)])
    outs = ", ".join([f"a{j}" for j in range(L)] + [f"b{j}" for j in range(L)])
    join = [f"x{j} = tl.reshape(tl.permute(tl.join(a{j}, b{j}), [0, 1, 4, 2, 3]), [Q, R, C])" for j in range(L)]
    store = []
    names = {j: f"x{j}" for j in range(L)}
    names.update({j: "x0" for j in range(L, LP)})          # padding words: never stored
    allw = _join_words(list(range(LP)), names, "Q, R, C", store, "xall")
    store += [f"jj = tl.arange(0, {LP})",
              "o4 = offs[:, :, :, None] + (jj * ls)[None, None, None, :]"]
    mask = f", mask=(jj < {L})[None, None, None, :]" if masked else ""
    store.append(f"tl.store(dst + o4, {allw}.to(tl.int32, bitcast=True){mask})")
    return (TEMPLATE.replace("$LOAD", ind(4, load("src", "ls", "offs", "Q, R, C", "x", 3)))
            .replace("$PRE_TABLE", ind(8, load("pre", "pre_ls", "pofs", "Q, R, C", "p", 3)))
            .replace("$POST_TABLE", ind(8, load("post", "post_ls", "pofs", "Q, R, C", "p", 3)))
            .replace("$PRE_CONST", ind(8, const("pre"))).replace("$POST_CONST", ind(8, const("post")))
            .replace("$PRE_MUL", ind(8, mul)).replace("$POST_MUL", ind(8, mul))
            .replace("$SPLIT", ind(4, split)).replace("$TW", ind(4, tw))
            .replace("$BF_DIT", ind(8, [f"{outs} = bf_dit_k0_fn({args})"]))
            .replace("$BF_DIF", ind(8, [f"{outs} = bf_dif_k0_fn({args})"]))
            .replace("$JOIN", ind(4, join)).replace("$STORE", ind(4, store))
            .replace("$XS", ", ".join(xs)))


def module_source(F, strategy: str) -> str:
    """Generated device functions (butterflies, scaling) + the pass kernel."""
    from ..ir.program import trace
    parts = ['"""Generated by zktensor (ntt_triton): field device functions from the compiler, then the NTT pass '
             'kernel template."""', HEADER]
    for name, fn, n in (("bf_dif", BF_DIF, 3), ("bf_dit", BF_DIT, 3), ("scale", SCALE, 2)):
        compiled = get_program(trace(fn, F, n), strategy, "triton")
        if compiled.meta["kernels"] != ["kernel_0"]:
            raise RuntimeError(f"ntt: expected the {name} program to fuse into one kernel, "
                               f"got {compiled.meta['kernels']}")
        src = kernels_of(compiled.source)
        parts.append(re.sub(r"\bkernel_(\d+)", lambda m: f"{name}_k{m.group(1)}", src))
    parts.append(_template(F.limbs32))
    return "\n\n".join(parts)


def module(F, strategy: str, interpret: bool):
    """The loaded kernel module for (field, strategy), generated and cached on disk."""
    return loaded_module("ntt_triton", (F.name, strategy, interpret), lambda: module_source(F, strategy),
                         strategy, "triton-ntt", ["ntt_pass"], interpret)


# =============================================================================
# Host wrapper
# =============================================================================
@dataclass(frozen=True)
class Pass:
    """One launch: `log_r` stages on tiles [Q, 2^log_r, C] with row stride S."""
    log_r: int
    S: int
    C: int
    Q: int
    programs: int


def schedule(log_n: int, total: int, dit: bool, cfg) -> list[Pass]:
    """Passes of at most cfg.B stages covering all log_n stages, in DIF order
    (H = N/2 first) or DIT order (H = 1 first); `total` elements (batch·N)."""
    n_pass = -(-log_n // cfg.B)
    sizes = [log_n // n_pass + (1 if i < log_n % n_pass else 0) for i in range(n_pass)]
    passes, done = [], 0
    for b in sizes:
        R = 1 << b
        S = (1 << done) if dit else (1 << (log_n - done - b))
        rows = total // R
        # a power of two that divides the rows: a tile's Q and C are aranges, and the programs
        # must cover every row (a batch of 3 small transforms, the prover's intt_abc, has 3·N/R)
        G = max(1, min(cfg.G, cfg.max_block // R if cfg.max_block >= R else 1, rows & -rows))
        C = min(G, S)
        Q = G // C
        passes.append(Pass(b, S, C, Q, total // (R * G)))
        done += b
    return passes


def ntt_triton(plan, data: torch.Tensor, cfg, strategy: str, out: torch.Tensor | None = None) -> torch.Tensor:
    """Run the plan on (L, batch, N) limbs with the Triton kernels (compiled on
    CUDA tensors, interpreted on CPU tensors). The result goes to `out` where given (a
    contiguous tensor of data's shape that is data itself or shares no memory with it).

    The first pass reads `data` and writes the result's buffer, the later ones work in
    place there: no copy of the input. A natural-order result of a DIF (or bit-reversed
    of a DIT) is one gather after the passes, from a scratch buffer into the result."""
    F, n, log_n = plan.F, plan.n, plan.log_n
    interpret = data.device.type != "cuda"
    mod = module(F.params, strategy, interpret)
    x = data.contiguous()
    B = x.shape[1]
    dit = plan.bitrev_in
    T = tables(F, n, x.device)
    tw = T.twiddles(plan.inverse)
    permute = dit == plan.bitrev_out          # DIF leaves bit-reversed order, DIT natural
    # the last pass scales in its own storage order (bit-reversed after DIF), before any gather
    pre, post = plan.pre_table(), plan.post_table(bitrev=not dit)

    def scale_arg(t):
        if t is None:
            return x, 0, 0               # a dummy pointer: never read
        if isinstance(t, int):
            t = T.constant(t)
            return t, t.stride(0), 2
        return t, t.stride(0), 1

    pre_t, pre_ls, pre_mode = scale_arg(pre)
    post_t, post_ls, post_mode = scale_arg(post)
    if permute or out is None:
        buf = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    else:
        buf = out
    passes = schedule(log_n, B * n, dit, cfg)
    cap = {} if cfg.max_registers is None else {"maxnreg": cfg.max_registers}
    for i, p in enumerate(passes):
        first, last = i == 0, i == len(passes) - 1
        src = x if first else buf
        args = (src, buf, tw, pre_t, post_t, buf.stride(0), tw.stride(0), pre_ls, post_ls, n - 1, p.S,
                p.S // p.C)
        meta = dict(R=1 << p.log_r, LOG_R=p.log_r, C=p.C, Q=p.Q, DIT=dit,
                    PRE=pre_mode if first else 0, POST=post_mode if last else 0)
        grid = (p.programs,)
        with counters.kernel():          # one launch (its interpreted torch work is its own)
            if interpret:
                with triton_mode(True):
                    mod.ntt_pass[grid](*args, **meta)
            else:
                mod.ntt_pass[grid](*args, **meta, num_warps=cfg.num_warps, **cap)
    if not permute:
        return buf
    idx = bitrev_index(n, buf.device)
    if out is None:
        return buf.index_select(2, idx)
    return torch.index_select(buf, 2, idx, out=out)


SIGNATURE = {"src": "*i32", "dst": "*i32", "tw": "*i32", "pre": "*i32", "post": "*i32", "ls": "i64",
             "tw_ls": "i64", "pre_ls": "i64", "post_ls": "i64", "n_mask": "i64", "S": "i32", "nb": "i32"}


def aot_compile(F, strategy: str, arch: str = "sm_90a", num_warps: int = 4, *, log_r: int, C: int, Q: int = 1,
                dit: bool = False, pre: int = 0, post: int = 0, maxnreg: int | None = None) -> dict:
    """Compile one pass kernel ahead of time (no GPU needed: the triton wheel
    carries ptxas and cuobjdump; see runtime.aot). Returns registers, local
    memory bytes, whether it spills, and the SASS opcode counts. `maxnreg`: ptxas's
    register cap (`NTTConfig.max_registers`)."""
    from ..runtime.aot import compile_kernel

    mod = module(F, strategy, interpret=False)
    sig = dict(SIGNATURE, **{k: "constexpr" for k in ("R", "LOG_R", "C", "Q", "DIT", "PRE", "POST")})
    const = {"R": 1 << log_r, "LOG_R": log_r, "C": C, "Q": Q, "DIT": dit, "PRE": pre, "POST": post}
    return compile_kernel(mod.ntt_pass, arch, sig, const, num_warps, coalesce=True, maxnreg=maxnreg)


# =============================================================================
# Reference: the pass schedule on Python ints
# =============================================================================
def reference(values: list[int], p: int, omega: int, passes: list[Pass], dit: bool = False) -> list[int]:
    """The butterflies exactly as the passes group them (tile by tile), on
    Python ints: DIF of natural-order values (bit-reversed result) or DIT of
    bit-reversed values (natural result). Checks the schedule's indexing."""
    x = list(values)
    total = len(x)
    n = total  # one polynomial
    for ps in passes:
        R = 1 << ps.log_r
        for t in range(ps.programs):
            for q in range(ps.Q):
                u = t * ps.Q + q
                blk, cc0 = u // (ps.S // ps.C), (u % (ps.S // ps.C)) * ps.C
                for s in range(ps.log_r):
                    lh = s if dit else ps.log_r - 1 - s
                    h = 1 << lh
                    H = h * ps.S
                    w_H = pow(omega, n // (2 * H), p)
                    for r in range(R):
                        if r % (2 * h) >= h:
                            continue
                        for c in range(ps.C):
                            i = blk * R * ps.S + r * ps.S + cc0 + c
                            j = i + H
                            w = pow(w_H, i % H, p)
                            if dit:
                                x[i], x[j] = (x[i] + x[j] * w) % p, (x[i] - x[j] * w) % p
                            else:
                                x[i], x[j] = (x[i] + x[j]) % p, (x[i] - x[j]) * w % p
    return x
