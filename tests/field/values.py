"""Test values: random plus edge values for a field."""
import random

from zktensor.algebra import FIELD_NAMES, field as field_record


def edge_values(p: int) -> list[int]:
    """0, 1, p-1, R mod p, 2^32-1 and 2^k ± 1 for word and field boundaries, reduced mod p."""
    F = next(field_record(n) for n in FIELD_NAMES if field_record(n).p == p)
    vals = {0, 1, p - 1, p - 2, F.R, (2 ** 32 - 1) % p, F.R2, (p - 1) // 2, (p + 1) // 2}
    for k in (31, 32, 51, 52, 63, 64, 104, 128, 192, 256, F.bits - 1, F.bits):
        for d in (-1, 0, 1):
            vals.add((2 ** k + d) % p)
    return sorted(vals)


def sample(p: int, n: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    edges = edge_values(p)
    vals = edges + [rng.randrange(p) for _ in range(max(0, n - len(edges)))]
    return vals[:n] if n >= len(edges) else vals


