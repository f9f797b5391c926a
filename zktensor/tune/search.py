"""The autotuner's entry points: which tasks a request stands for (`plan`, `targets`), and
`autotune`, which runs them through the `Tuner` and persists the winners."""
from __future__ import annotations

from .cache import TuneCache, bucket
from .resolve import lookup as _lookup
from .tuner import Result, Tuner
from .workloads import Task

OPS = ("mul", "ntt", "msm", "msm_prepared", "groth16")
DEFAULT_OPS = ("mul", "ntt", "msm")
DEFAULT_FIELDS = ("bn254",)
DEFAULT_SIZES = {
    "mul": (1 << 20,),
    "ntt": (1 << 12, 1 << 16, 1 << 20),
    "msm": (1 << 12, 1 << 16),
    "msm_prepared": (1 << 12, 1 << 16),
    "groth16": (1 << 12, 1 << 16),
}


def _default_device() -> str:
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def _split(name: str) -> tuple[str, str]:
    curve, _, part = name.strip().lower().partition(".")
    return curve, part


def targets(op: str, name: str) -> list[str]:
    """The field/group names that `name` (a curve like bn254, a field like bn254.fr, or a
    group like bn254.g1) stands for in `op`."""
    curve, part = _split(name)
    if op == "mul":
        return [f"{curve}.{part}"] if part in ("fr", "fq") else [f"{curve}.fr", f"{curve}.fq"] if not part \
            else [f"{curve}.fr"]
    if op == "ntt":
        return [f"{curve}.{part}"] if part in ("fr", "fq") else [f"{curve}.fr"]
    if op in ("msm", "msm_prepared"):
        return [f"{curve}.{part}"] if part in ("g1", "g2") else [f"{curve}.g1"]
    return [curve]


def plan(ops=DEFAULT_OPS, fields=DEFAULT_FIELDS, sizes=None, device=None, *, batch: int = 1,
         zkey=None, thorough: bool = False, max_copies: int = 4, seed: int = 0) -> list[Task]:
    """The tasks of a run: every op × field × size (sizes: one list for all ops, or None for
    each op's defaults). `groth16` expands into the prover's NTT and MSM tasks; with `zkey`,
    at that key's curve and sizes."""
    device = str(device or _default_device())
    opts = {"thorough": thorough, "seed": seed}
    tasks: list[Task] = []

    def add(t: Task):
        if all((t.op, t.field, t.size, t.batch, t.device) != (u.op, u.field, u.size, u.batch, u.device)
               for u in tasks):
            tasks.append(t)

    for op in ops:
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")
        if op == "groth16":
            for t in groth16_tasks(fields, sizes, device, zkey, opts, thorough, max_copies):
                add(t)
            continue
        for name in fields:
            for f in targets(op, name):
                for n in (sizes or DEFAULT_SIZES[op]):
                    o = dict(opts, max_copies=max_copies) if op == "msm_prepared" else dict(opts)
                    add(Task(op, f, int(n), batch, device, o))
    return tasks


def groth16_tasks(fields, sizes, device, zkey, opts, thorough=False, max_copies=4) -> list[Task]:
    """The prover's work: intt/coset-ntt of A, B, C as a batch of 3 (key ntt.b4) at the domain
    size; prepared G1 MSMs at the domain size (H) and the witness length (A, B1, C; about
    half their scalars 0 or 1, like circom witnesses), G2 (B2) with `thorough`."""
    if zkey is not None:
        from ..groth16.formats import read_zkey
        z = read_zkey(zkey) if not hasattr(zkey, "domain_size") else zkey
        curves = [z.curve]
        shapes = [(z.domain_size, z.n_vars)]
    else:
        curves = sorted({_split(f)[0] for f in fields})
        shapes = [(bucket(n), n) for n in (sizes or DEFAULT_SIZES["groth16"])]
    out = []
    for curve in curves:
        for domain, n_vars in shapes:
            out.append(Task("ntt", f"{curve}.fr", domain, 3, device, dict(opts, coset=True)))
            mo = dict(opts, max_copies=max_copies)
            out.append(Task("msm_prepared", f"{curve}.g1", domain, 1, device, mo))
            if bucket(n_vars) != bucket(domain):
                out.append(Task("msm_prepared", f"{curve}.g1", n_vars, 1, device, dict(mo, sparse=0.5)))
            if thorough:
                out.append(Task("msm_prepared", f"{curve}.g2", n_vars, 1, device, dict(mo, sparse=0.5)))
    return out


def autotune(ops=DEFAULT_OPS, fields=DEFAULT_FIELDS, sizes=None, budget: float | None = 600.0, device=None,
             *, force: bool = False, progress=None, cache: TuneCache | None = None, tasks=None,
             workloads=None, extra_candidates=None, **plan_options) -> list[Result]:
    """Tune and persist; returns one Result per task (see `Tuner`). Ctrl-C propagates as
    KeyboardInterrupt after everything measured so far is saved."""
    tasks = tasks if tasks is not None else plan(ops, fields, sizes, device, **plan_options)
    tuner = Tuner(cache=cache, budget=budget, progress=progress, force=force, workloads=workloads,
                  extra_candidates=extra_candidates)
    return tuner.run(tasks)


def lookup(op: str, field: str, size: int, device=None, batch: int = 1) -> dict | None:
    """The cached winner for op/field/size on device (what the ops use), or None."""
    return _lookup(op, field, size, device or "cpu", batch)


__all__ = ["autotune", "plan", "targets", "lookup", "groth16_tasks", "OPS", "DEFAULT_OPS", "DEFAULT_FIELDS",
           "DEFAULT_SIZES"]
