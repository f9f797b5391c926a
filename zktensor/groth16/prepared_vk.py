"""A verification key prepared once for many pairing checks (the prover verifies every proof).

Groth16's check is e(-A, B)·e(alpha_1, beta_2)·e(vk_x, gamma_2)·e(C, delta_2) = 1, and
three of its G2 points (beta_2, gamma_2, delta_2) belong to the key. So, once per key:

* e(alpha_1, beta_2) needs no Miller loop per proof: its Miller loop value is kept and
  multiplied in (the final exponentiation is multiplicative);
* gamma_2 and delta_2 are "prepared" (``algebra.pairing.prepare_g2``): the coefficients of
  their Miller loops' lines are computed once, and per proof only scaled at the G1 point.

Per proof only (-A, B) runs full doubling and addition steps. The check runs compiled
(``kernels.pairing_cpu``: the Miller loop and the final exponentiation in one call) where
that module is cached or is compiled in this process (see ``pairing_cpu.compiled``: not in
a one-shot verifier, nor without the MLIR bindings or with ZKTENSOR_NO_COMPILER), else on
Python ints (``algebra.pairing.miller_loop``); both compute the same values (tests compare
them, and py_ecc's verdict).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from zktensor.algebra import pairing as ate

from .formats.json_io import VerificationKey


@dataclass(frozen=True)
class PreparedVK:
    curve: str
    alphabeta_ml: tuple      # the Miller loop value of (alpha_1, beta_2)
    gamma_2: tuple           # prepare_g2(gamma_2), () for the identity
    delta_2: tuple
    _words: dict = field(default_factory=dict, compare=False, repr=False)

    def compiled_lines(self, which: str):
        """gamma_2's or delta_2's lines as the compiled pairing's words (made on first use)."""
        lines = self._words.get(which)
        if lines is None:
            from zktensor.kernels.pairing_cpu import Lines
            lines = self._words[which] = Lines(self.curve, getattr(self, which))
        return lines


@functools.lru_cache(maxsize=16)
def prepare(vk: VerificationKey) -> PreparedVK:
    """The key's fixed part of every check (cached per key)."""
    c = vk.curve
    return PreparedVK(c, ate.miller_loop(c, [(vk.alpha_1, vk.beta_2)]),
                      ate.prepare_g2(c, vk.gamma_2) if vk.gamma_2 is not None else (),
                      ate.prepare_g2(c, vk.delta_2) if vk.delta_2 is not None else ())


def groth16_check(vk: VerificationKey, neg_a, b, vk_x, c, compiled: bool | None = None) -> bool:
    """e(-A, B)·e(alpha_1, beta_2)·e(vk_x, gamma_2)·e(C, delta_2) = 1. ``compiled``: None
    (the compiled check where it can be had: ``kernels.pairing_cpu.compiled``'s default),
    True (it, compiled now if need be, or raise) or False (Python ints)."""
    from zktensor.kernels import pairing_cpu
    prep = prepare(vk)
    cp = pairing_cpu.compiled(vk.curve, build=compiled) if compiled is not False else None
    if compiled and cp is None:
        raise RuntimeError(f"no compiled {vk.curve} pairing here (no MLIR bindings and no cached module, "
                           "or ZKTENSOR_NO_COMPILER)")
    if cp is not None:
        return cp.check([(neg_a, b)], [(vk_x, prep.compiled_lines("gamma_2")),
                                       (c, prep.compiled_lines("delta_2"))], extra=prep.alphabeta_ml)
    T = ate.pairing_curve(vk.curve).tower
    f = ate.miller_loop(vk.curve, [(neg_a, b)], [(vk_x, prep.gamma_2), (c, prep.delta_2)])
    f = T.mul12(f, prep.alphabeta_ml)
    return ate.final_exponentiation(vk.curve, f) == T.one


__all__ = ["prepare", "groth16_check", "PreparedVK"]
