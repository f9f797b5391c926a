"""The circuit of a quantised model: constraints, witness, output, files, proof.

    circuit = zt.zkml.compile(model, example_input, input_scale=2, act_scale=8)
    circuit.num_constraints
    ints, floats = circuit.output(x)            # the circuit's exact output (x: one input or a batch)
    circuit.save_r1cs("model.r1cs"); circuit.save_witness(x, "model.wtns")
    key = circuit.setup("model.zkey")           # development setup (zktensor setup; INSECURE)
    proof, public = circuit.prove(x, "model.zkey")
    zt.zkml.verify("model.vk.json", public, proof, circuit=circuit)

Building walks the layer graph once: every layer turns its input's LC tensor and bounds
into its output's (``lc``), emitting constraints through the ``gadgets``, and records a
witness step, a function of whole tensors (B, ...) that fills its wires. Linear and Conv2d
layers with fixed weights are coefficient arithmetic on the LCs (no constraint); with
private weights every product is one constraint (``private``).

Wires are numbered as they are made; the files use the iden3 order (wire 0 = 1, public
outputs, public inputs, private inputs, the rest), which ``order``/``new_id`` map to.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from . import gadgets as G
from .frontend import UnsupportedError, consumers
from .lc import LC, N8, P, System, signed_to_words, words_to_ints
from .quant import QModel, quantise_input


@dataclass
class T:
    """A circuit tensor: LCs (*shape, K) and integer bounds lo <= value <= hi (shape)."""
    lc: LC
    lo: torch.Tensor
    hi: torch.Tensor


def _unfold(t: torch.Tensor, kernel, stride, padding=(0, 0)) -> torch.Tensor:
    """(C, H, W, K) -> (C, OH, OW, kh, kw, K) windows (zero padding)."""
    x = t.permute(3, 0, 1, 2)
    if any(padding):
        x = F.pad(x, (padding[1], padding[1], padding[0], padding[0]))
    x = x.unfold(2, kernel[0], stride[0]).unfold(3, kernel[1], stride[1])   # (K, C, OH, OW, kh, kw)
    return x.permute(1, 2, 3, 4, 5, 0)


def _mat(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return (x.unsqueeze(0) * w).sum(-1) if x.dim() == 1 else w @ x


class Circuit:
    def __init__(self, qm: QModel):
        self.qm = qm
        self.options = qm.options
        self.input_shape = tuple(qm.input_shape)
        self.sys = System()
        self.steps = []            # (layer index, fn, input layer indices)
        self.big_values = {}       # wire -> field value, for wires that do not depend on the input
        self.commitment_wire = None
        self.commitment = None
        self.gadgets = {}          # layer index -> the rescale's wires (creation ids), for tests and tools
        self.products = {}         # private-weight layer index -> its products' scheme and multiplications
        self._build()
        self.order = self.sys.order()
        self.new_id = np.empty_like(self.order)
        self.new_id[self.order] = np.arange(self.order.size)
        self._mats = None

    # -- building -------------------------------------------------------------------------
    def _build(self):
        qm, opts, sys = self.qm, self.options, self.sys
        Ts: list[T] = []
        private = opts.weights == "private"
        if private:
            from .private import PrivateWeights
            self.private = PrivateWeights(self)
        for i, L in enumerate(qm.layers):
            name = f"layer {i} {L.op} {L.where}".strip()
            ins = [Ts[j] for j in L.inputs]
            if L.op == "input":
                kind = "public_input" if opts.input_visibility == "public" else "private_input"
                ids = sys.wires(L.shape, "input", kind)
                self.input_ids = ids.reshape(-1)
                b = opts.input_bits
                lo = torch.full(L.shape, -(1 << (b - 1)), dtype=torch.int64)
                t = T(LC.wires(ids), lo, lo.neg() - 1)
                rc = G.range_check(sys, "input", t.lc.flat(), b) if kind == "private_input" else None

                def fn(W, x, ids=self.input_ids, rc=rc):
                    W[:, ids] = x.reshape(x.shape[0], -1)
                    if rc is not None:
                        rc(W, x.reshape(x.shape[0], -1))
                    return x
            elif L.op in ("linear", "conv"):
                t, fn = (self.private.layer if private else self._fixed_layer)(i, L, ins[0], name)
            elif L.op == "relu":
                if L.inputs[0] in qm.fused:
                    t, fn = ins[0], (lambda W, v: v)
                else:
                    x = ins[0]
                    o, lo, hi, rfn, self.gadgets[i] = G.rescale(sys, name, x.lc.flat(), x.lo.reshape(-1), x.hi.reshape(-1), 0,
                                                  relu=True)
                    t = T(o.reshape(*L.shape), lo.reshape(L.shape), hi.reshape(L.shape))
                    fn = (lambda W, v, rfn=rfn, s=L.shape: rfn(W, v.reshape(v.shape[0], -1)).reshape(-1, *s))
            elif L.op == "avgpool":
                x = ins[0]
                k, s = L.attrs["kernel"], L.attrs["stride"]
                u = lambda a, K_: _unfold(a, k, s).reshape(*L.shape, k[0] * k[1] * K_)      # noqa: E731
                lc = LC(u(x.lc.idx, x.lc.K), u(x.lc.coef, x.lc.K))
                lo = u(x.lo.unsqueeze(-1), 1).sum(-1)
                hi = u(x.hi.unsqueeze(-1), 1).sum(-1)
                G.check_limit(int(max(-lo.min(), hi.max())), name)
                t = T(lc, lo, hi)
                mfn = None
                if lc.K > 1 and self._read_by_a_product_layer(i):
                    # a Linear or Conv2d reads every pooled value in many rows (conv: channels ×
                    # kernel taps), each a copy of its K-term LC: one wire per value (one linear
                    # constraint) makes those rows K times shorter (fewer nonzeros for A·w, B·w
                    # and the witness check)
                    o, _, mfn = G.materialize(sys, f"{name}: pooled sums", lc.flat())
                    t = T(o.reshape(*L.shape), lo, hi)

                def fn(W, v, k=k, s=s, mfn=mfn):
                    out = v.unfold(2, k[0], s[0]).unfold(3, k[1], s[1]).sum((-1, -2))
                    if mfn is not None:
                        mfn(W, out.reshape(out.shape[0], -1))
                    return out
            elif L.op == "maxpool":
                t, fn = self._maxpool(L, ins[0], name)
            elif L.op == "reshape":
                x = ins[0]
                t = T(x.lc.reshape(*L.shape), x.lo.reshape(L.shape), x.hi.reshape(L.shape))
                fn = (lambda W, v, s=L.shape: v.reshape(v.shape[0], *s))
            elif L.op == "add":
                s = qm.scales[i]
                f = [1 << (s - qm.scales[j]) for j in L.inputs]
                a, b = ins
                lo = a.lo * f[0] + b.lo * f[1]
                hi = a.hi * f[0] + b.hi * f[1]
                G.check_limit(int(max(-lo.min(), hi.max())), name)
                t = T(a.lc.scale(f[0]) + b.lc.scale(f[1]), lo, hi)
                fn = (lambda W, va, vb, f=f: va * f[0] + vb * f[1])
            elif L.op == "addconst":
                x, c = ins[0], L.attrs["c_int"]
                lo, hi = x.lo + c, x.hi + c
                G.check_limit(int(max(-lo.min(), hi.max())), name)
                t = T(x.lc + LC.const(c), lo, hi)           # the constant rides on wire 0: no constraint
                fn = (lambda W, v, c=c: v + c.unsqueeze(0))
            elif L.op == "argmax":
                x = ins[0]
                o, _, afn = G.argmax(sys, name, x.lc.flat(), x.lo.reshape(-1), x.hi.reshape(-1))
                n = x.lo.numel()
                t = T(o.reshape(*L.shape), torch.zeros(L.shape, dtype=torch.int64),
                      torch.full(L.shape, n - 1, dtype=torch.int64))
                fn = (lambda W, v, afn=afn, s=L.shape: afn(W, v.reshape(v.shape[0], -1)).reshape(-1, *s))
            else:
                raise UnsupportedError(f"{L.op} at {L.where}: not supported by the circuit compiler")
            Ts.append(t)
            self.steps.append((i, fn, L.inputs))
        self._outputs(Ts[-1])
        if private:
            self.private.commit()

    def _read_by_a_product_layer(self, i: int) -> bool:
        """Whether layer i's output reaches a Linear or Conv2d (through reshapes)."""
        users = consumers(self.qm.layers)
        todo = list(users[i])
        while todo:
            j = todo.pop()
            op = self.qm.layers[j].op
            if op in ("linear", "conv"):
                return True
            if op == "reshape":
                todo += users[j]
        return False

    def _fixed_layer(self, i, L, x: T, name: str):
        """Linear/Conv2d with constant weights: the accumulator is an LC, then one rescale."""
        w, b, k = L.attrs["w_int"], L.attrs["b_int"], L.attrs["k"]
        up = 1 << max(-k, 0)
        wmax = int(w.abs().max()) if w.numel() else 0
        xmax = int(max(-x.lo.min(), x.hi.max()))
        fan = w[0].numel()
        G.check_limit((fan * wmax * xmax + int(b.abs().max())) * up, f"{name}: accumulator")
        G.check_limit(wmax * int(x.lc.coef.abs().max()) * up, f"{name}: coefficients")
        wp, wn = w.clamp(min=0), w.clamp(max=0)
        if L.op == "linear":
            xl = x.lc.flat()
            n, K = xl.idx.shape
            o = w.shape[0]
            idx = xl.idx.unsqueeze(0).expand(o, n, K).reshape(o, n * K)
            coef = (w.unsqueeze(-1) * xl.coef.unsqueeze(0)).reshape(o, n * K)
            hi = _mat(wp, x.hi) + _mat(wn, x.lo) + b
            lo = _mat(wp, x.lo) + _mat(wn, x.hi) + b
            bias = b

            def acc(v, w=w, b=b):
                return v.reshape(v.shape[0], -1) @ w.T + b
        else:
            st, pd = L.attrs["stride"], L.attrs["padding"]
            kern = tuple(w.shape[2:])
            O = w.shape[0]
            ui = _unfold(x.lc.idx, kern, st, pd)
            uc = _unfold(x.lc.coef, kern, st, pd)
            OH, OW = ui.shape[1], ui.shape[2]
            Pn = OH * OW
            Fk = ui.shape[0] * kern[0] * kern[1] * ui.shape[-1]
            ui = ui.permute(1, 2, 0, 3, 4, 5).reshape(1, Pn, Fk)
            uc = uc.permute(1, 2, 0, 3, 4, 5).reshape(1, Pn, -1, x.lc.K)
            coef = (w.reshape(O, 1, -1, 1) * uc).reshape(O * Pn, Fk)
            idx = ui.expand(O, Pn, Fk).reshape(O * Pn, Fk)
            cv = lambda a, ww: F.conv2d(a.unsqueeze(0), ww, None, st, pd)[0]    # noqa: E731
            hi = (cv(x.hi, wp) + cv(x.lo, wn) + b[:, None, None]).reshape(-1)
            lo = (cv(x.lo, wp) + cv(x.hi, wn) + b[:, None, None]).reshape(-1)
            bias = b.repeat_interleave(Pn)

            def acc(v, w=w, b=b, st=st, pd=pd):
                return F.conv2d(v, w, b, st, pd).reshape(v.shape[0], -1)
        lc = LC(torch.cat([idx, torch.zeros(idx.shape[0], 1, dtype=torch.int64)], 1),
                torch.cat([coef, bias.unsqueeze(1)], 1)).compact()
        if up > 1:
            lc, lo, hi = lc.scale(up), lo * up, hi * up
        o, olo, ohi, rfn, self.gadgets[i] = G.rescale(self.sys, name, lc, lo, hi, max(k, 0), relu=i in self.qm.fused)
        shape = L.shape
        t = T(o.reshape(*shape), olo.reshape(shape), ohi.reshape(shape))

        def fn(W, v, acc=acc, rfn=rfn, up=up, shape=shape):
            return rfn(W, acc(v) * up).reshape(-1, *shape)
        return t, fn

    def _maxpool(self, L, x: T, name: str):
        k, s = L.attrs["kernel"], L.attrs["stride"]
        C, OH, OW = L.shape
        sl = lambda a, i, j: a[:, i:i + s[0] * (OH - 1) + 1:s[0], j:j + s[1] * (OW - 1) + 1:s[1]]   # noqa: E731
        offs = [(i, j) for i in range(k[0]) for j in range(k[1])]
        cur = T(LC(sl(x.lc.idx, 0, 0), sl(x.lc.coef, 0, 0)).flat(), sl(x.lo, 0, 0).reshape(-1),
                sl(x.hi, 0, 0).reshape(-1))
        fns = []
        for n, (i, j) in enumerate(offs[1:]):
            nxt = T(LC(sl(x.lc.idx, i, j), sl(x.lc.coef, i, j)).flat(), sl(x.lo, i, j).reshape(-1),
                    sl(x.hi, i, j).reshape(-1))
            o, lo, hi, mfn = G.maximum(self.sys, f"{name} max {n + 1}/{len(offs) - 1}", cur.lc, cur.lo, cur.hi,
                                       nxt.lc, nxt.lo, nxt.hi)
            fns.append(((i, j), mfn))
            cur = T(o, lo, hi)
        t = T(cur.lc.reshape(*L.shape), cur.lo.reshape(L.shape), cur.hi.reshape(L.shape))

        def fn(W, v):
            B = v.shape[0]
            vs = lambda i, j: v[:, :, i:i + s[0] * (OH - 1) + 1:s[0], j:j + s[1] * (OW - 1) + 1:s[1]]  # noqa: E731
            m = vs(0, 0).reshape(B, -1)
            for (i, j), mfn in fns:
                m = mfn(W, m, vs(i, j).reshape(B, -1))
            return m.reshape(B, C, OH, OW)
        return t, fn

    def _outputs(self, t: T):
        """The last layer's values become the public outputs: its own wires when it made fresh
        ones (a rescale's), else new wires equal to it."""
        lc = t.lc.flat()
        self.output_shape = tuple(t.lo.shape)
        ids = lc.idx[:, 0] if lc.K == 1 else None
        block = None
        if ids is not None and bool((lc.coef == 1).all()) and ids.numel():
            for wb in self.sys.wire_blocks:
                if wb.start == int(ids[0]) and wb.n == ids.numel() and wb.kind == "internal" and \
                        bool((ids == torch.arange(wb.start, wb.start + wb.n)).all()):
                    block = wb
        if block is not None:
            block.kind = "output"
            self.output_ids = ids
            self._out_fn = None
        else:
            _, w, mfn = G.materialize(self.sys, "output", lc, kind="output")
            self.output_ids = w
            self._out_fn = mfn
        self.output_lo, self.output_hi = t.lo, t.hi

    # -- sizes ----------------------------------------------------------------------------
    @property
    def num_constraints(self) -> int:
        return self.sys.n_constraints

    @property
    def num_wires(self) -> int:
        return self.sys.n_wires

    @property
    def counts(self) -> dict:
        return self.sys.counts()

    @property
    def n_public(self) -> int:
        c = self.counts
        return c["output"] + c["public_input"]

    # -- witness --------------------------------------------------------------------------
    def _run(self, x):
        X = quantise_input(x, self.options, self.input_shape)
        B = X.shape[0]
        W = torch.zeros(B, self.sys.n_wires, dtype=torch.int64)
        W[:, 0] = 1
        vals = []
        for i, fn, ins in self.steps:
            v = fn(W, X) if not ins else fn(W, *[vals[j] for j in ins])
            vals.append(v)
        out = vals[-1].reshape(B, -1)
        if self._out_fn is not None:
            self._out_fn(W, out)
        return W, out.reshape(B, *self.output_shape)

    def output(self, x):
        """(integers, floats) of the circuit's outputs for x (one input or a batch): exactly what
        its public output wires hold, and their value at the output scale."""
        _, out = self._run(x)
        return out, out.double() / 2.0 ** self.qm.output_scale

    def witness_words(self, x) -> np.ndarray:
        """(n_wires, 8) uint32 standard-form words of the witness for one input, in file order."""
        W, _ = self._run(x)
        if W.shape[0] != 1:
            raise ValueError(f"a witness is for one input, got a batch of {W.shape[0]}")
        words = signed_to_words(W[0].numpy()[self.order])
        if self.big_values:
            from .lc import ints_to_words
            ids = np.array(list(self.big_values), dtype=np.int64)
            words[self.new_id[ids]] = ints_to_words(self.big_values.values())
        return words

    def witness(self, x) -> list[int]:
        """The witness for one input as field elements (Python ints), in file order."""
        return words_to_ints(self.witness_words(x))

    def witness_chunks(self, x) -> list:
        """The .wtns (version 2) for one input, as byte chunks (``outputs.write_outputs`` takes them)."""
        from ..groth16.formats.binfile import encode_binfile
        from ..groth16.formats.wtns import HEADER, MAGIC, VALUES, VERSION
        words = self.witness_words(x)
        header = N8.to_bytes(4, "little") + P.to_bytes(N8, "little") + len(words).to_bytes(4, "little")
        return encode_binfile(MAGIC, VERSION, [(HEADER, header), (VALUES, words.astype("<u4").tobytes())])

    def save_witness(self, x, path) -> None:
        """A .wtns (version 2) for one input, written atomically."""
        from ..groth16.outputs import write_outputs
        write_outputs([(path, self.witness_chunks(x))])

    # -- constraint system ----------------------------------------------------------------
    def matrices(self):
        """A, B, C in coordinate (COO) form as numpy arrays: (rows, wires, words) with rows and wires
        uint32 (nnz,) and the coefficients' standard-form words uint32 (nnz, 8), sorted by row then
        wire, wires in file order, duplicates merged and zeros dropped (``System.matrices``)."""
        if self._mats is None:
            self._mats = self.sys.matrices(self.new_id)
        return self._mats

    def r1cs(self, path: str = "<zkml circuit>"):
        """The constraint system as zktensor's R1CS object (for checks and `groth16.setup`)."""
        from ..groth16.formats.r1cs import R1CS, SparseMatrix
        mats = [SparseMatrix(N8, r, c, w) for r, c, w in self.matrices()]
        c = self.counts
        return R1CS(path, P, "bn254", N8, self.num_wires, c["output"], c["public_input"], c["private_input"],
                    self.num_wires, self.num_constraints, *mats, wire_to_label=np.arange(self.num_wires, dtype="<u8"))

    def r1cs_chunks(self) -> list:
        """An iden3 .r1cs (version 1) as byte chunks: header, constraints (factors sorted by wire),
        wire-to-label map."""
        from ..groth16.formats.binfile import encode_binfile
        from ..groth16.formats.r1cs import CONSTRAINTS, HEADER, MAGIC, WIRE2LABEL
        c = self.counts
        n, nc = self.num_wires, self.num_constraints
        header = b"".join([N8.to_bytes(4, "little"), P.to_bytes(N8, "little"), n.to_bytes(4, "little"),
                           c["output"].to_bytes(4, "little"), c["public_input"].to_bytes(4, "little"),
                           c["private_input"].to_bytes(4, "little"), n.to_bytes(8, "little"),
                           nc.to_bytes(4, "little")])
        mats = self.matrices()
        counts = [np.bincount(r.astype(np.int64), minlength=nc) for r, _, _ in mats]
        per_row = 3 + 9 * (counts[0] + counts[1] + counts[2])
        start = np.concatenate([[0], np.cumsum(per_row)[:-1]]).astype(np.int64)
        buf = np.zeros(int(per_row.sum()), dtype="<u4")
        off = start.copy()
        for m, (rows, cols, words) in enumerate(mats):
            buf[off] = counts[m]
            r = rows.astype(np.int64)
            first = np.concatenate([[0], np.cumsum(counts[m])[:-1]])
            rank = np.arange(r.size) - first[r]
            pos = off[r] + 1 + 9 * rank
            buf[pos] = cols
            buf[pos[:, None] + 1 + np.arange(8)] = words
            off = off + 1 + 9 * counts[m]
        labels = np.arange(n, dtype="<u8").tobytes()
        return encode_binfile(MAGIC, 1, [(HEADER, header), (CONSTRAINTS, buf), (WIRE2LABEL, labels)])

    def save_r1cs(self, path) -> None:
        """The .r1cs (``r1cs_chunks``), written atomically."""
        from ..groth16.outputs import write_outputs
        write_outputs([(path, self.r1cs_chunks())])

    def constraint_name(self, row: int) -> str:
        return self.sys.name_of(row)

    def check(self, witness) -> None:
        """Raise WitnessError naming the first constraint the witness (ints or words, file
        order) violates."""
        from ..groth16.r1cs_to_qap import R1CSCheck, WitnessError, words_to_limbs
        if not isinstance(witness, np.ndarray):
            from .lc import ints_to_words
            witness = ints_to_words(witness)
        if witness.shape[0] != self.num_wires:
            raise WitnessError(f"the witness has {witness.shape[0]} values, the circuit {self.num_wires} wires")
        if not hasattr(self, "_checker"):
            self._checker = R1CSCheck(self.r1cs())
        i = self._checker.first_unsatisfied(words_to_limbs(witness))
        if i is not None:
            raise WitnessError(f"the witness violates constraint {i} (of {self.num_constraints}): "
                               f"{self.constraint_name(i)}", i)

    # -- Groth16 --------------------------------------------------------------------------
    def setup(self, zkey_path, vk_path=None):
        """A development Groth16 key for this circuit (single party: INSECURE; see groth16.setup)."""
        from ..groth16.setup import setup
        return setup(self.r1cs(str(zkey_path)), zkey_path, vk_path=vk_path)

    def prove(self, x, key, check: bool = True):
        """(proof, public signals) for one input; key: a .zkey path or a groth16.Prover."""
        from ..groth16.formats.wtns import Wtns
        from ..groth16.key import PLAIN
        from ..groth16.prover import Prover
        words = self.witness_words(x)
        if check:
            self.check(words)
        # one proof from a path: GZKP's weighted bases would take longer to build than they save
        prover = key if isinstance(key, Prover) else Prover(key, helper=False, checkpoint=PLAIN)
        w = Wtns("witness", P, "bn254", N8, memoryview(words.astype("<u4").tobytes()))
        return prover.prove(w, check=False)

    def decode(self, public) -> tuple:
        """Public signals -> (output integers, floats, input integers or None)."""
        vals = [int(v) for v in public]
        c = self.counts
        n_out = c["output"] - (1 if self.commitment_wire is not None else 0)

        def signed(vs):
            vs = [v - P if v > P // 2 else v for v in vs]
            if any(abs(v) >= 1 << 62 for v in vs):
                raise ValueError("a public output or input is not a small signed integer: not this circuit's")
            return torch.tensor(vs, dtype=torch.int64)
        out = signed(vals[:n_out]).reshape(self.output_shape)
        inp = signed(vals[c["output"]:c["output"] + c["public_input"]])
        return out, out.double() / 2.0 ** self.qm.output_scale, (inp.reshape(self.input_shape) if inp.numel() else None)


def verify(vk, public, proof, circuit: Circuit | None = None) -> bool:
    """A Groth16 proof of a zkml circuit: the pairing check (``groth16.verify``), and with the
    circuit also the public signals' shape and the public inputs' range (the bound analysis
    assumes it; out-of-range public inputs are refused, not proven about)."""
    from ..groth16.verifier import as_public, verify as g16_verify
    pub = as_public(public)
    if circuit is not None:
        if len(pub) != circuit.n_public:
            raise ValueError(f"{len(pub)} public signals, the circuit has {circuit.n_public}")
        try:
            _, _, inp = circuit.decode(pub)
        except ValueError:
            return False
        b = circuit.options.input_bits
        if inp is not None and (int(inp.min()) < -(1 << (b - 1)) or int(inp.max()) >= 1 << (b - 1)):
            return False
    return g16_verify(vk, pub, proof)


def compile(model, example_input, **options) -> Circuit:
    """A circuit for ``model`` (a torch.nn.Module or a torch.export program) on inputs shaped
    like ``example_input`` (batch dimension 1). Options: input_scale, input_bits, act_scale,
    weight_bits, input_visibility ('public' | 'private'), weights ('fixed' | 'private')."""
    from .frontend import export, to_layers
    from .quant import Options, quantise
    if not isinstance(example_input, torch.Tensor):
        raise TypeError(f"example_input must be a torch.Tensor, got {type(example_input).__name__}")
    if not example_input.is_floating_point():
        raise TypeError(f"example_input must be a float tensor, got {example_input.dtype}")
    unknown = set(options) - set(Options.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; known: {sorted(Options.__dataclass_fields__)}")
    layers = to_layers(export(model, example_input))
    return Circuit(quantise(layers, Options(**options)))
