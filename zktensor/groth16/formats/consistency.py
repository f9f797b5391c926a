"""Do these files belong together? Checks before proving, with both files named.

snarkjs's prover refuses a witness for another curve or with another length
than the key's nVars; these checks say so before any work is done, and also
match a ``.r1cs`` against a key (same curve, wires, public count, and a domain
that holds the constraints plus snarkjs's public-input rows).
"""
from __future__ import annotations

from .errors import FormatError
from .r1cs import R1CS
from .wtns import Wtns
from .zkey import ZKey


def _names(a, b) -> str:
    return f"{getattr(a, 'path', None) or type(a).__name__} and {getattr(b, 'path', None) or type(b).__name__}"


def check_witness_for_zkey(zkey: ZKey, wtns: Wtns) -> None:
    if wtns.prime != zkey.r:
        raise FormatError(f"{_names(wtns, zkey)} do not match: the witness is over the prime "
                          f"{wtns.prime}, the key is for {zkey.curve} (r = {zkey.r})")
    if len(wtns) != zkey.n_vars:
        raise FormatError(f"{_names(wtns, zkey)} do not match: the witness has {len(wtns)} values, "
                          f"the key's circuit {zkey.n_vars} wires")


def check_r1cs_for_zkey(zkey: ZKey, r1cs: R1CS) -> None:
    problems = []
    if r1cs.curve != zkey.curve:
        problems.append(f"curve {r1cs.curve} vs {zkey.curve}")
    if r1cs.n_wires != zkey.n_vars:
        problems.append(f"{r1cs.n_wires} wires vs nVars = {zkey.n_vars}")
    if r1cs.n_public != zkey.n_public:
        problems.append(f"{r1cs.n_public} public signals vs nPublic = {zkey.n_public}")
    if r1cs.n_constraints + r1cs.n_public + 1 > zkey.domain_size:
        problems.append(f"{r1cs.n_constraints} constraints + {r1cs.n_public + 1} public rows "
                        f"do not fit domainSize = {zkey.domain_size}")
    if problems:
        raise FormatError(f"{_names(r1cs, zkey)} do not match: {'; '.join(problems)}")
