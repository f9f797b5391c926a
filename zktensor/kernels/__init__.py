"""Triton kernel templates and their CPU counterparts, with the host wrappers that launch them."""
