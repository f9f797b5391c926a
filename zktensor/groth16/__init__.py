"""Groth16 over circom/snarkjs files: formats, setup, prover, verifier.

One protocol step per module (names from the Groth16 paper and snarkjs):
``formats`` (files), ``r1cs_to_qap`` (A·w, B·w, C·w, snarkjs's coset, the witness
check), ``prover`` (the prover graph, on `zktensor.runtime.graph`),
``fixed_base`` (k·P tables), ``setup`` (a development setup), ``verifier``.

    import zktensor as zt
    prover = zt.groth16.Prover("circuit.zkey", r1cs="circuit.r1cs")
    proof, public = prover.prove("witness.wtns")
    zt.groth16.verify("verification_key.json", public, proof)

Importing this package imports none of them (the names above load on first use),
so reading a file does not pull in the compiler or the GPU stack.
"""
_LAZY = {
    "Prover": ("prover", "Prover"),
    "prove": ("prover", "prove"),
    "WitnessError": ("r1cs_to_qap", "WitnessError"),
    "verify": ("verifier", "verify"),
    "verification_key": ("vk", "verification_key"),
}


_MODULES = {"formats", "r1cs_to_qap", "prover", "fixed_base", "setup", "demo", "verifier", "vk"}


def __getattr__(name):
    import importlib            # here: importlib (and the warnings it imports) is start-up time
    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{mod}", __name__), attr)
    if name in _MODULES:          # zt.groth16.setup.setup(...), zt.groth16.formats.read_zkey(...)
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = list(_LAZY)
