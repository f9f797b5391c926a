"""bench/groth16.py's circuits made in Python: .r1cs and .wtns written directly, no circom.

    c = bench_circuit(16)            # or bits_circuit(16): the same constraints as the circom sources
    c.write("bench.r1cs", "witness.wtns")

A machine without node (the lent GPU machine) cannot compile bench/groth16.py's circom
sources nor compute their witnesses with snarkjs. These builders emit the same constraint
systems (the same signals, constraints and public signals as `CIRCUIT` and `BITS_CIRCUIT`
of bench/groth16.py, one constraint per circom `<==`/`===`; circom may order wires and
write linear combinations differently, which changes neither the sizes nor the witness's
density) and compute the witness with Python ints. The tests check every constraint
against the witness (`R1CS.first_unsatisfied`, Python ints) and the sizes against the
circom shapes.

Wires, as circom numbers them: 0 the constant, then the public outputs, the public
inputs, the private inputs, then the other signals.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

BN254_R = 21888242871839275222246405745257275088548364400416034343698204186575808495617
N8 = 32


@dataclass
class Circuit:
    """A constraint system A·w ∘ B·w = C·w being built: rows of {wire: coefficient} per matrix."""
    n_pub_out: int
    n_pub_in: int
    n_prv_in: int
    witness: list = field(default_factory=list)
    rows: list = field(default_factory=lambda: ([], [], []))     # per matrix: (row, col, coef)

    def wire(self, value: int) -> int:
        self.witness.append(value % BN254_R)
        return len(self.witness) - 1

    def constrain(self, a: dict, b: dict, c: dict) -> None:
        row = self.n_constraints
        for m, lc in enumerate((a, b, c)):
            for col, coef in lc.items():
                self.rows[m].append((row, col, coef))
        self._n = row + 1

    @property
    def n_constraints(self) -> int:
        return getattr(self, "_n", 0)

    @property
    def n_wires(self) -> int:
        return len(self.witness)

    def r1cs_bytes(self) -> list:
        """The iden3 .r1cs (version 1) as byte chunks: header, constraints (terms in wire
        order), the wire-to-label map (the identity)."""
        from zktensor.groth16.formats.binfile import encode_binfile
        from zktensor.groth16.formats.r1cs import CONSTRAINTS, HEADER, MAGIC, WIRE2LABEL
        n, nc = self.n_wires, self.n_constraints
        header = b"".join([N8.to_bytes(4, "little"), BN254_R.to_bytes(N8, "little"), n.to_bytes(4, "little"),
                           self.n_pub_out.to_bytes(4, "little"), self.n_pub_in.to_bytes(4, "little"),
                           self.n_prv_in.to_bytes(4, "little"), n.to_bytes(8, "little"), nc.to_bytes(4, "little")])
        per = [[[] for _ in range(nc)] for _ in range(3)]
        for m in range(3):
            for row, col, coef in self.rows[m]:
                per[m][row].append((col, coef % BN254_R))
        out = bytearray()
        for row in range(nc):
            for m in range(3):
                terms = sorted(per[m][row])
                out += len(terms).to_bytes(4, "little")
                for col, coef in terms:
                    out += col.to_bytes(4, "little") + coef.to_bytes(N8, "little")
        labels = np.arange(n, dtype="<u8").tobytes()
        return encode_binfile(MAGIC, 1, [(HEADER, header), (CONSTRAINTS, bytes(out)), (WIRE2LABEL, labels)])

    def write(self, r1cs_path, wtns_path) -> None:
        from zktensor.groth16.formats.wtns import write_wtns
        from zktensor.groth16.outputs import write_outputs
        write_outputs([(r1cs_path, self.r1cs_bytes())])
        write_wtns(wtns_path, self.witness, BN254_R)


def bench_circuit(nchain: int, nrange: int, bits: int, x: int, v: list[int]) -> Circuit:
    """bench/groth16.py's `CIRCUIT`: s[0] = x·x, s[i+1] = s[i]^2 + i + 1 (NCHAIN squarings), for
    each v[j] its `bits` bits b (b·(b - 1) = 0 each, sum_i 2^i·b_i = v[j]), out = s[NCHAIN]·x;
    x public, out the public output."""
    c = Circuit(n_pub_out=1, n_pub_in=1, n_prv_in=nrange)
    s = [x * x % BN254_R]
    for i in range(nchain):
        s.append((s[-1] * s[-1] + i + 1) % BN254_R)
    one = c.wire(1)
    out = c.wire(s[-1] * x)
    xw = c.wire(x)
    vw = [c.wire(val) for val in v]
    sw = [c.wire(val) for val in s]
    bw = [[c.wire((val >> i) & 1) for i in range(bits)] for val in v]
    c.constrain({xw: 1}, {xw: 1}, {sw[0]: 1})
    for i in range(nchain):
        c.constrain({sw[i]: 1}, {sw[i]: 1}, {sw[i + 1]: 1, one: -(i + 1)})
    for j in range(nrange):
        for i in range(bits):
            c.constrain({bw[j][i]: 1}, {bw[j][i]: 1, one: -1}, {})
        c.constrain({}, {}, {**{bw[j][i]: 1 << i for i in range(bits)}, vw[j]: -1})
    c.constrain({sw[nchain]: 1}, {xw: 1}, {out: 1})
    return c


def bits_circuit(nwords: int, rounds: int, v: list[int]) -> Circuit:
    """bench/groth16.py's `BITS_CIRCUIT`: words v[j] split into 32 bits (as above), x[0][i] =
    b[0][i]·b[1][(i + 7) % 32], then rounds of x[r + 1][i] = 1 - x[r][i] - b' + 2·x[r][i]·b'
    (XNOR with b' = b[r % NWORDS][(i + r) % 32]), out = x[ROUNDS][0]·x[ROUNDS][1]."""
    c = Circuit(n_pub_out=1, n_pub_in=0, n_prv_in=nwords)
    bit = [[(val >> i) & 1 for i in range(32)] for val in v]
    xs = [[bit[0][i] * bit[1 % nwords][(i + 7) % 32] for i in range(32)]]
    for r in range(rounds):
        xs.append([1 - (xs[r][i] ^ bit[r % nwords][(i + r) % 32]) for i in range(32)])
    one = c.wire(1)
    out = c.wire(xs[rounds][0] * xs[rounds][1])
    vw = [c.wire(val) for val in v]
    bw = [[c.wire(b) for b in row] for row in bit]
    xw = [[c.wire(b) for b in row] for row in xs]
    for j in range(nwords):
        for i in range(32):
            c.constrain({bw[j][i]: 1}, {bw[j][i]: 1, one: -1}, {})
        c.constrain({}, {}, {**{bw[j][i]: 1 << i for i in range(32)}, vw[j]: -1})
    for i in range(32):
        c.constrain({bw[0][i]: 1}, {bw[1 % nwords][(i + 7) % 32]: 1}, {xw[0][i]: 1})
    for r in range(rounds):
        for i in range(32):
            bb = bw[r % nwords][(i + r) % 32]
            c.constrain({xw[r][i]: 2}, {bb: 1}, {xw[r + 1][i]: 1, one: -1, xw[r][i]: 1, bb: 1})
    c.constrain({xw[rounds][0]: 1}, {xw[rounds][1]: 1}, {out: 1})
    return c


def circuit(k: int, kind: str = "bench", bits: int = 32) -> Circuit:
    """The 2^k circuit of bench/groth16.py (`shape`, `shape_bits`), with its inputs drawn as
    bench/groth16.py draws them (random.Random(k))."""
    from bench.groth16 import shape, shape_bits
    rng = random.Random(k)
    if kind == "bench":
        nchain, nrange = shape(k)
        return bench_circuit(nchain, nrange, bits, 3, [rng.getrandbits(bits) for _ in range(nrange)])
    nwords, rounds = shape_bits(k)
    return bits_circuit(nwords, rounds, [rng.getrandbits(32) for _ in range(nwords)])


__all__ = ["Circuit", "bench_circuit", "bits_circuit", "circuit", "BN254_R"]
