"""Slow, obviously-correct Python-int oracles that tests of fast paths compare against.

* ``field``: prime-field and Fq2 arithmetic, an O(N^2) DFT and inverse DFT.
* ``ec``: affine point arithmetic over Fq and Fq2, double-and-add, naive MSM.
* ``snarkjs_layout``: how snarkjs writes G1/G2 points in a .zkey (Montgomery LE words).
* ``pyecc``: conversion between our point tuples and py_ecc's objects.

Nothing here imports fast code; the curve parameters come from the
``zktensor.algebra.curves`` records (data, checked when built).
"""
