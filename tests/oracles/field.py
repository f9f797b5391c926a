"""Prime-field oracle: plain Python-int arithmetic mod p, Fq2 pairs, and an O(N^2) DFT.

Every function takes the modulus explicitly and returns values in [0, p).
Written for clarity, not speed: the reference that fast field, NTT and
extension-field code is compared against.
"""
from __future__ import annotations


# -- Fp ---------------------------------------------------------------------------


def add(a: int, b: int, p: int) -> int:
    return (a + b) % p


def sub(a: int, b: int, p: int) -> int:
    return (a - b) % p


def neg(a: int, p: int) -> int:
    return (-a) % p


def mul(a: int, b: int, p: int) -> int:
    return (a * b) % p


def power(a: int, e: int, p: int) -> int:
    """a^e mod p; a negative e means the inverse raised to -e."""
    if e < 0:
        return pow(inv(a, p), -e, p)
    return pow(a, e, p)


def inv(a: int, p: int) -> int:
    """a^-1 mod p, by Python's pow(a, -1, p) (extended Euclid; tests check it
    against Fermat's a^(p-2), which is ~100x slower for 753-bit p)."""
    if a % p == 0:
        raise ZeroDivisionError("inverse of zero")
    return pow(a, -1, p)


def div(a: int, b: int, p: int) -> int:
    return mul(a, inv(b, p), p)


# -- Fq2 = Fq[u] / (u^2 - beta), elements (c0, c1) = c0 + c1·u ----------------------


def fq2_add(a, b, p):
    return ((a[0] + b[0]) % p, (a[1] + b[1]) % p)


def fq2_sub(a, b, p):
    return ((a[0] - b[0]) % p, (a[1] - b[1]) % p)


def fq2_neg(a, p):
    return ((-a[0]) % p, (-a[1]) % p)


def fq2_mul(a, b, p, beta):
    # (a0 + a1 u)(b0 + b1 u) = (a0 b0 + beta a1 b1) + (a0 b1 + a1 b0) u
    c0 = a[0] * b[0] + beta * a[1] * b[1]
    c1 = a[0] * b[1] + a[1] * b[0]
    return (c0 % p, c1 % p)


def fq2_scale(a, k, p):
    """a · k with k in Fq."""
    return ((a[0] * k) % p, (a[1] * k) % p)


def fq2_inv(a, p, beta):
    # 1 / (a0 + a1 u) = (a0 - a1 u) / (a0^2 - beta a1^2)
    norm = (a[0] * a[0] - beta * a[1] * a[1]) % p
    n_inv = inv(norm, p)
    return ((a[0] * n_inv) % p, (-a[1] * n_inv) % p)


def fq2_power(a, e, p, beta):
    if e < 0:
        return fq2_power(fq2_inv(a, p, beta), -e, p, beta)
    result = (1, 0)
    for bit in bin(e)[2:]:
        result = fq2_mul(result, result, p, beta)
        if bit == "1":
            result = fq2_mul(result, a, p, beta)
    return result


# -- DFT over Fp ------------------------------------------------------------------


def is_primitive_root_of_unity(omega: int, n: int, p: int) -> bool:
    """omega^n == 1 and omega^(n/q) != 1 for every prime q dividing n."""
    if pow(omega, n, p) != 1:
        return False
    m, q = n, 2
    while m > 1:
        if m % q == 0:
            if pow(omega, n // q, p) == 1:
                return False
            while m % q == 0:
                m //= q
        q += 1
    return True


def dft(values, omega: int, p: int) -> list[int]:
    """out[k] = sum_j values[j] · omega^(j·k) mod p, in natural order: the
    evaluations of the polynomial with coefficients ``values`` at omega^k.
    O(N^2). ``omega`` must be a primitive N-th root of unity, N = len(values)."""
    n = len(values)
    if not is_primitive_root_of_unity(omega, n, p):
        raise ValueError(f"omega is not a primitive {n}-th root of unity mod p")
    out = []
    for k in range(n):
        w_k = pow(omega, k, p)
        acc = 0
        for c in reversed(values):          # Horner: the polynomial at w_k
            acc = (acc * w_k + c) % p
        out.append(acc)
    return out


def idft(values, omega: int, p: int) -> list[int]:
    """The inverse of ``dft``: out[j] = N^-1 · sum_k values[k] · omega^(-j·k) mod p."""
    n = len(values)
    n_inv = inv(n, p)
    return [(v * n_inv) % p for v in dft(values, inv(omega, p), p)]


def bit_reverse(values) -> list:
    """values permuted by bit-reversing the index (length a power of two)."""
    n = len(values)
    bits = n.bit_length() - 1
    if n != 1 << bits:
        raise ValueError("length is not a power of two")
    return [values[int(format(i, f"0{bits}b")[::-1] or "0", 2)] for i in range(n)]
