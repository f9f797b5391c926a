"""The circom/snarkjs file formats, read and written with Python ints.

=================  ===========================================================
module             file
=================  ===========================================================
``binfile``        the iden3 binary container (magic, version, sections)
``r1cs``           circom ``.r1cs`` constraint system
``wtns``           circom ``.wtns`` witness
``zkey``           snarkjs Groth16 ``.zkey`` proving key (reader and writer)
``json_io``        ``proof.json``, ``public.json``, ``verification_key.json``
``consistency``    do a key, a witness and a constraint system belong together
=================  ===========================================================

Every reader is strict: a truncated, corrupt or mismatched file raises
:class:`FormatError` (a ``ValueError``) whose message starts with the file name.
"""
from .consistency import check_r1cs_for_zkey, check_witness_for_zkey
from .errors import FormatError
from .json_io import (Proof, VerificationKey, read_proof, read_public, read_vk, write_proof,
                      write_public, write_vk)
from .r1cs import R1CS, read_r1cs
from .wtns import Wtns, read_wtns, write_wtns
from .zkey import ZKey, read_zkey, write_zkey

__all__ = [
    "FormatError", "R1CS", "read_r1cs", "Wtns", "read_wtns", "write_wtns", "ZKey", "read_zkey",
    "write_zkey", "Proof", "VerificationKey", "read_proof", "write_proof", "read_public",
    "write_public", "read_vk", "write_vk", "check_witness_for_zkey", "check_r1cs_for_zkey",
]
