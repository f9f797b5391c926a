"""Tensor-level operations: elementwise arithmetic, batch inversion, NTT, MSM."""
