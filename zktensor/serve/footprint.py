"""How many bytes a proving key will hold once resident, from its .zkey header alone.

The service evicts for a key before it loads it (`residency.Residency`), so that the
resident keys and the one being loaded stay within the budget; this is what it evicts
for. The header gives the sizes (nVars, domainSize, the curve; the first word of the
coefficient section counts the coefficients), and the tables are the ones
`groth16.key.ResidentKey` makes, sized as it budgets them (`key.auto_checkpoints`,
`ops.msm.prepared_bytes`): H and B2, and the G1 witness tables side by side up to
`key.MERGE_UPTO` wires, apart above; plus A's and B's coefficients, one field element
and one int64 column index each, and each matrix's row pointers (domainSize + 1 int64). tests/serve/test_residency.py holds it equal to
``Prover.memory_bytes()`` on real keys; where it is off (a tuned window the cost model
would not choose, or a GPU: no estimate), the eviction after the load still holds the
budget.
"""
from __future__ import annotations

import os

from ..groth16.formats.binfile import read_binfile
from ..groth16.formats.curves import curve_from_q
from ..groth16.formats.zkey import GROTH_HEADER, MAGIC, SEC_COEFS, VERSION


def key_header(path) -> dict:
    """{curve, n_vars, domain_size, n_coefs} of a .zkey, reading its header only
    (FormatError for a file that is not a Groth16 key)."""
    f = read_binfile(os.fspath(path), MAGIC, max_version=VERSION)
    h = f.reader(GROTH_HEADER)
    n8q = h.u32("n8q")
    curve = curve_from_q(h.bigint(n8q, "q"))
    if curve is None:
        raise f.error("header: the base field is not bn254's or bls12_381's")
    n8r = h.u32("n8r")
    h.take(n8r, "r")
    n_vars, _n_public, domain_size = h.u32("nVars"), h.u32("nPublic"), h.u32("domainSize")
    n_coefs = f.reader(SEC_COEFS).u32("coefficient count")
    return {"curve": curve, "n_vars": n_vars, "domain_size": domain_size, "n_coefs": n_coefs}


def resident_bytes(path, device, plain: bool = False) -> int | None:
    """Bytes ``Prover(path, device=device, checkpoint=PLAIN if plain else None)``'s
    ``memory_bytes()`` will be (module doc); None on a GPU, where the MSM keeps its bases
    in another layout (`ops.msm.device`) that this does not model."""
    import torch

    from ..groth16.key import MERGE_UPTO, PLAIN, auto_checkpoints, default_device
    from ..ops.msm import prepared_bytes
    from ..points import group
    from ..tensor import field
    hd = key_header(path)
    dev = torch.device(device) if device is not None else default_device()
    if dev.type != "cpu":
        return None
    G1, G2 = group(f"{hd['curve']}.g1"), group(f"{hd['curve']}.g2")
    n, d = hd["n_vars"], hd["domain_size"]
    witness = {"ab1c": (G1, 3 * n, n)} if n <= MERGE_UPTO else {u: (G1, n, n) for u in ("a", "b1", "c")}
    tables = {"B2": (G2, n, n), "H": (G1, d, d), **witness}         # name: (group, bases, scalars)
    checkpoints = {name: PLAIN for name in tables} if plain else auto_checkpoints(tables, dev)
    total = sum(prepared_bytes(G, m, checkpoints[name], n_hint=k) for name, (G, m, k) in tables.items() if m)
    limbs = field(f"{hd['curve']}.fr").limbs
    return total + hd["n_coefs"] * (limbs * 4 + 8) + 2 * (d + 1) * 8
