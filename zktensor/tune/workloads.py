"""What the tuner measures: one workload per op, with a trusted reference.

A workload holds the inputs of one (op, field, size, batch, device) task, runs the op
under a candidate configuration (`run`), and checks an output against a reference
(`check`: None when equal, else why not). The reference comes from a trusted path,
itself checked against Python integers before any candidate is measured:

- mul: the built-in default kernels (tuning cache off), checked elementwise against
  Python ints on a sample of positions (all of them up to 4096 elements);
- ntt: an O(N^2) DFT in Python ints for tiny sizes; else the per-stage algorithm
  (`algorithm="stages"`, what the NTT kernels are tested against), checked at
  sampled outputs against sum_j x_j (g w^k)^j in Python ints;
- msm / msm_prepared: the bases are built with known discrete logs (P = A_j + B_i
  with A = a·g, B = c·g, as `ops.msm.bucket_offsets` builds its offsets), so the exact
  answer (sum_i k_i log P_i)·g is one Python-int scalar multiplication, for any size.

A candidate whose output differs from the reference, or that raises, is rejected.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from dataclasses import fields as dc_fields

import torch

from .space import Space, msm_space, mul_space, ntt_space


class TrustedPathError(RuntimeError):
    """The reference itself disagrees with Python integers: nothing can be tuned."""


@dataclass
class Task:
    """One tuning problem: op on field (a field or group name) at size elements/points."""
    op: str
    field: str
    size: int
    batch: int = 1
    device: str = "cpu"
    options: dict = field(default_factory=dict)     # coset, sparse, max_copies, thorough, seed

    def label(self) -> str:
        k = self.size.bit_length() - 1
        size = f"2^{k}" if self.size == 1 << k else str(self.size)
        b = f" x{self.batch}" if self.batch > 1 else ""
        return f"{self.op} {self.field} {size}{b}"


def _sync(device: torch.device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Workload:
    op = "?"
    #: config keys that go to zt.config(...) rather than to the op's config object
    scope_keys = ("strategy", "lanes", "ifma", "block", "num_warps", "num_stages")

    def __init__(self, task: Task):
        self.task = task
        self.device = torch.device(task.device)
        self.seed = int(task.options.get("seed", 0))
        self.thorough = bool(task.options.get("thorough", False))

    # to implement
    def space(self) -> Space:
        raise NotImplementedError

    def reference(self):
        """Compute (and verify) the reference; called once before any candidate."""
        raise NotImplementedError

    def run(self, cfg: dict):
        raise NotImplementedError

    def check(self, out) -> str | None:
        raise NotImplementedError

    # optional
    def setup(self, cfg: dict) -> None:
        """Untimed preparation for a candidate (e.g. MSM base tables)."""

    def teardown(self, cfg: dict) -> None:
        """Free what setup made."""

    def sync(self):
        _sync(self.device)

    def _scope(self, cfg: dict):
        from ..config import config
        return config(tuned=False, **{k: cfg.get(k) for k in self.scope_keys})


# -- mul ------------------------------------------------------------------------------------------


def _tensor_equal_reason(out: torch.Tensor, ref: torch.Tensor, what: str = "elements") -> str | None:
    if out.shape != ref.shape:
        return f"output shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    if torch.equal(out, ref):
        return None
    bad = (out != ref).reshape(out.shape[0], -1).any(dim=0)
    idx = int(torch.nonzero(bad)[0])
    return f"wrong result: {int(bad.sum())} of {bad.numel()} {what} differ from the reference (first at {idx})"


class MulWorkload(Workload):
    """c = a * b elementwise over `size` elements."""
    op = "mul"

    def __init__(self, task: Task):
        super().__init__(task)
        from ..tensor import field as field_space
        self.F = field_space(task.field)
        g = torch.Generator().manual_seed(self.seed)
        n = task.size * max(task.batch, 1)
        self.a = self.F.random(n, generator=g).to(self.device)
        self.b = self.F.random(n, generator=g).to(self.device)
        self.ref = None

    def space(self) -> Space:
        return mul_space(self.device, self.F.limbs, self.thorough)

    def run(self, cfg: dict):
        with self._scope(cfg):
            return (self.a * self.b).data

    def reference(self):
        from ..config import config
        with config(tuned=False):
            ref = (self.a * self.b).data
        self.sync()
        n = ref.shape[1]
        rng = random.Random(self.seed)
        idx = list(range(n)) if n <= 4096 else sorted(rng.sample(range(n), 1024))
        it = torch.tensor(idx, dtype=torch.int64, device=self.device)
        from ..tensor import FieldTensor
        av = FieldTensor(self.F, self.a.data.index_select(1, it)).to_ints()
        bv = FieldTensor(self.F, self.b.data.index_select(1, it)).to_ints()
        cv = FieldTensor(self.F, ref.index_select(1, it)).to_ints()
        p = self.F.p
        for i, x, y, z in zip(idx, av, bv, cv):
            if x * y % p != z:
                raise TrustedPathError(f"mul {self.F.name}: the default kernels give a wrong product at "
                                       f"{i}; not tuning")
        self.ref = ref
        return ref

    def check(self, out) -> str | None:
        return _tensor_equal_reason(out, self.ref)


# -- ntt ------------------------------------------------------------------------------------------


class NTTWorkload(Workload):
    """zt.ntt over (batch, size) elements (options: coset=True for a coset NTT)."""
    op = "ntt"
    scope_keys = ("strategy", "lanes", "ifma")

    def __init__(self, task: Task):
        super().__init__(task)
        from ..ops.ntt import NTTConfig, check_size
        from ..tensor import field as field_space
        self.F = field_space(task.field)
        self.log_n = check_size(self.F, task.size)
        self.names = {f.name for f in dc_fields(NTTConfig)}
        g = torch.Generator().manual_seed(self.seed)
        shape = (task.batch, task.size) if task.batch > 1 else (task.size,)
        self.x = self.F.random(shape, generator=g).to(self.device)
        self.coset = None
        if task.options.get("coset"):     # the Groth16 prover's shift (snarkjs): w_2N, else 7
            self.coset = self.F.root_of_unity(2 * task.size) if self.log_n < self.F.two_adicity else 7
        self.ref = None

    def space(self) -> Space:
        return ntt_space(self.device, self.log_n, self.F.limbs, self.thorough)

    def ntt_config(self, cfg: dict):
        from ..ops.ntt import NTTConfig
        return NTTConfig(**{k: v for k, v in cfg.items() if k in self.names and v is not None})

    def run(self, cfg: dict):
        from ..ops.ntt import ntt
        with self._scope(cfg):
            return ntt(self.x, coset=self.coset, config=self.ntt_config(cfg)).data

    def reference(self):
        from ..config import config
        from ..ops.ntt import NTTConfig, ntt
        F, n = self.F, self.task.size
        p = F.p
        w = F.root_of_unity(n)
        rows = self.x.reshape(-1, n)
        g = self.coset or 1
        if n <= 128 and rows.shape[0] * n * n <= 1 << 16:
            xs = rows.to_ints()
            exp = []
            for r in xs:
                exp.append([sum(v * pow(g * pow(w, k, p) % p, j, p) for j, v in enumerate(r)) % p
                            for k in range(n)])
            self.ref = F.tensor(exp, device=self.device).data.reshape(self.x.data.shape)
            return self.ref
        with config(tuned=False):
            ref = ntt(self.x, coset=self.coset, config=NTTConfig(algorithm="stages")).data
        self.sync()
        rng = random.Random(self.seed)
        from ..tensor import FieldTensor
        refrows = FieldTensor(F, ref).reshape(-1, n)
        for _ in range(2):
            r = rng.randrange(rows.shape[0])
            k = rng.randrange(n)
            xs = rows[r].to_ints()
            z = g * pow(w, k, p) % p
            acc, zj = 0, 1
            for v in xs:
                acc = (acc + v * zj) % p
                zj = zj * z % p
            if refrows[r, k].to_ints() != acc:
                raise TrustedPathError(f"ntt {F.name} 2^{self.log_n}: the per-stage reference is wrong at "
                                       f"row {r}, index {k}; not tuning")
        self.ref = ref
        return ref

    def check(self, out) -> str | None:
        return _tensor_equal_reason(out, self.ref)


# -- msm ------------------------------------------------------------------------------------------


class MSMWorkload(Workload):
    """zt.msm of `size` random scalars (options: sparse=fraction of 0/1 scalars) over bases
    of known discrete logs."""
    op = "msm"
    scope_keys = ()
    prepared = False

    def __init__(self, task: Task):
        super().__init__(task)
        from ..ops.msm import MSMConfig
        from ..points import group
        self.G = group(task.field)
        self.Fr = self.G.Fr
        self.names = {f.name for f in dc_fields(MSMConfig)}
        n = task.size
        self.sparse = float(task.options.get("sparse", 0.0) or 0.0)
        self.max_copies = int(task.options.get("max_copies", 4))
        rng = random.Random(f"msm-{task.field}-{n}-{self.seed}")
        r = self.G.r
        m1 = 1 << ((n - 1).bit_length() // 2) if n > 1 else 1
        m2 = -(-n // m1)
        a = [rng.randrange(1, r) for _ in range(m1)]
        c = [rng.randrange(1, r) for _ in range(m2)]
        dev = self.device
        A = self.G.generator((m1,), device=dev) * self.Fr.tensor(a, device=dev)
        C = self.G.generator((m2,), device=dev) * self.Fr.tensor(c, device=dev)
        self.bases = (A.reshape(m1, 1) + C.reshape(1, m2)).reshape(m1 * m2)[:n].contiguous()
        self.logs = [(a[i // m2] + c[i % m2]) % r for i in range(n)]
        ks = []
        for _ in range(max(task.batch, 1)):
            row = []
            for _ in range(n):
                u = rng.random()
                row.append(0 if u < self.sparse / 2 else 1 if u < self.sparse else rng.randrange(r))
            ks.append(row)
        self.k_ints = ks
        k = self.Fr.tensor(ks if task.batch > 1 else ks[0], device=dev)
        self.scalars = k
        self.ref = None
        self._prepared = None

    def space(self) -> Space:
        return msm_space(self.device, self.G, self.task.size, self.task.batch, prepared=self.prepared,
                         sparse=self.sparse > 0, max_copies=self.max_copies, thorough=self.thorough)

    def msm_config(self, cfg: dict):
        from ..ops.msm import MSMConfig
        return MSMConfig(**{k: v for k, v in cfg.items() if k in self.names and v is not None})

    def run(self, cfg: dict):
        from ..config import config
        from ..ops.msm import msm
        with config(tuned=False):
            out = msm(self.scalars, self.bases, config=self.msm_config(cfg))
        return out

    def reference(self):
        from ..algebra.curves import _mul
        rec = self.G.params
        r = self.G.r
        exp = []
        for row in self.k_ints:
            s = sum(k * l for k, l in zip(row, self.logs)) % r
            exp.append(_mul(rec, rec.generator, s))
        # the bases themselves: spot-check two of them against their logs
        rng = random.Random(self.seed)
        for i in rng.sample(range(self.task.size), min(2, self.task.size)):
            if self.bases[i].to_affine() != _mul(rec, rec.generator, self.logs[i]):
                raise TrustedPathError(f"msm {self.G.name}: base {i} is not its log times g; not tuning")
        self.ref = exp if self.task.batch > 1 else exp[0]
        return self.ref

    def check(self, out) -> str | None:
        got = out.to_affine()
        if got != self.ref:
            return "wrong result: the MSM differs from (sum k_i log P_i)·g"
        return None


class PreparedMSMWorkload(MSMWorkload):
    """msm over bases from msm_prepare (GZKP weighted copies every `checkpoint` windows);
    the preparation is untimed (a prover does it once per key)."""
    op = "msm_prepared"
    prepared = True

    def setup(self, cfg: dict) -> None:
        from ..config import config
        from ..ops.msm import msm_prepare
        c = self.msm_config(cfg)
        with config(tuned=False):
            self._prepared = msm_prepare(self.bases, window=c.window, checkpoint=c.checkpoint or 1 << 10,
                                         config=c)

    def teardown(self, cfg: dict) -> None:
        self._prepared = None

    def run(self, cfg: dict):
        from ..config import config
        from ..ops.msm import msm
        if self._prepared is None:
            self.setup(cfg)
        with config(tuned=False):
            return msm(self.scalars, self._prepared, config=self.msm_config(cfg))


WORKLOADS: dict[str, type[Workload]] = {
    "mul": MulWorkload,
    "ntt": NTTWorkload,
    "msm": MSMWorkload,
    "msm_prepared": PreparedMSMWorkload,
}
