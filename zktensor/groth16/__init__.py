"""Groth16 over circom/snarkjs files: formats, setup, prover, verifier.

One protocol step per module (names from the Groth16 paper and snarkjs);
importing this package imports none of them, so reading a file does not pull in
the compiler or the GPU stack.
"""
