"""A deterministic generator of bad (and of unusual but legal) inputs for every reader.

Everything is derived from one test circuit's files (tests/fixtures/build/<name>, made
by scripts/fixtures.sh): its .zkey, .wtns, .r1cs, proof.json, public.json and
verification_key.json. Each ``Case`` replaces one or more of those files by mutated
bytes and names the command that reads them:

* ``prove`` / ``prove_r1cs``: ``zktensor prove`` without / with ``--r1cs``;
* ``verify``: ``zktensor verify``;
* ``paths``: ``zktensor prove`` with the output paths of ``Case.outputs``;
* ``setup``: ``zktensor setup`` of the (mutated) .r1cs; ``setup_paths``: with the key and
  verification key paths of ``Case.outputs``.

In ``Case.outputs``, ``@role`` names an input file, ``@unwritable/...`` a path in a
directory this process cannot write in (``unwritable.py``: also as root), anything else
a path relative to the case's directory.

``expect``: "fail" (non-zero exit, one line naming ``Case.blame``), "ok" (a legal
encoding: exit 0 and a proof that verifies), "fail_or_ok" (random bit flips: either,
but never a traceback, and a proof written only if it verifies).
The same seed gives the same cases.
"""
from __future__ import annotations

import json
import random
import struct
from dataclasses import dataclass, field

SEED = 20261125


@dataclass
class Case:
    name: str
    command: str                       # prove | prove_r1cs | verify | paths | setup | setup_paths
    files: dict = field(default_factory=dict)   # role -> bytes (roles: zkey wtns r1cs proof public vk)
    expect: str = "fail"
    blame: str | None = None           # the role whose file the message must name
    outputs: tuple | None = None       # paths: (proof, public), setup_paths: (key, vk); see the doc


# -- the iden3 container ----------------------------------------------------------------


def sections(data: bytes) -> tuple[bytes, int, list[list]]:
    """(magic, version, [[id, payload], ...]) of a well-formed container."""
    magic, version, n = struct.unpack_from("<4sII", data, 0)
    pos, out = 12, []
    for _ in range(n):
        sid, size = struct.unpack_from("<IQ", data, pos)
        pos += 12
        out.append([sid, data[pos:pos + size]])
        pos += size
    return magic, version, out


def container(magic: bytes, version: int, secs, count: int | None = None) -> bytes:
    head = struct.pack("<4sII", magic, version, len(secs) if count is None else count)
    return head + b"".join(struct.pack("<IQ", sid, len(p)) + bytes(p) for sid, p in secs)


def _with(data: bytes, sid: int, fn) -> bytes:
    magic, version, secs = sections(data)
    for s in secs:
        if s[0] == sid:
            s[1] = fn(bytearray(s[1]))
    return container(magic, version, secs)


def _put(buf: bytearray, off: int, value: bytes) -> bytearray:
    buf[off:off + len(value)] = value
    return buf


def _u32(v: int) -> bytes:
    return struct.pack("<I", v & 0xFFFFFFFF)


def _offset(data: bytes, sid: int) -> tuple[int, int]:
    """(payload offset, size) of section sid in the file."""
    pos = 12
    _, _, n = struct.unpack_from("<4sII", data, 0)
    for _ in range(n):
        s, size = struct.unpack_from("<IQ", data, pos)
        if s == sid:
            return pos + 12, size
        pos += 12 + size
    raise KeyError(sid)


def container_cases(role: str, data: bytes, command: str, rng: random.Random, flips: int) -> list[Case]:
    """What every container reader must refuse: cuts, resizes, bad headers, duplicated,
    missing and unknown sections; plus bit flips."""
    magic, version, secs = sections(data)
    out = []

    def bad(name, blob, expect="fail"):
        out.append(Case(f"{role}: {name}", command, {role: blob}, expect, role))
    bad("empty file", b"")
    bad("3 bytes", data[:3])
    bad("header only", data[:12])
    bad("wrong magic", b"xxxx" + data[4:])
    bad("version 0", data[:4] + _u32(0) + data[8:])
    bad("version 99", data[:4] + _u32(99) + data[8:])
    bad("nSections 0xFFFFFFFF", data[:8] + _u32(0xFFFFFFFF) + data[12:])
    bad("nSections + 1", data[:8] + _u32(len(secs) + 1) + data[12:])
    bad("nSections - 1", data[:8] + _u32(len(secs) - 1) + data[12:])
    bad("last byte cut", data[:-1])
    bad("a byte appended", data + b"\0")
    for sid, payload in secs:
        off, size = _offset(data, sid)
        opaque = role == "zkey" and sid == 10    # the MPC transcript: no prover reads it

        def resized(name, blob, bad=bad, opaque=opaque):
            bad(name, blob, expect="fail_or_ok" if opaque else "fail")
        bad(f"cut in section {sid}", data[:off + size // 2])
        bad(f"cut at section {sid}'s header", data[:off - 6])
        size_at = off - 8
        bad(f"section {sid} size 2^63", data[:size_at] + struct.pack("<Q", 1 << 63) + data[size_at + 8:])
        bad(f"section {sid} size + 1", data[:size_at] + struct.pack("<Q", size + 1) + data[size_at + 8:])
        if size >= 4:
            resized(f"section {sid} resized - 4", container(magic, version,
                [[s, p[:-4] if s == sid else p] for s, p in secs]))
        resized(f"section {sid} resized + 4", container(magic, version,
            [[s, p + b"\0" * 4 if s == sid else p] for s, p in secs]))
        bad(f"section {sid} duplicated", container(magic, version, secs + [[sid, payload]]))
        bad(f"section {sid} missing", container(magic, version, [[s, p] for s, p in secs if s != sid])) \
            if not (role == "zkey" and sid == 10) and not (role == "r1cs" and sid == 3) else None
    # snarkjs skips sections it does not know in a witness; a Groth16 zkey has exactly 1..10
    bad("unknown section 77", container(magic, version, secs + [[77, b"\0" * 8]]),
        expect="fail" if role == "zkey" else "ok")
    # legal: the sections in another order (readers find sections by id)
    bad("sections reversed (legal)", container(magic, version, secs[::-1]), expect="ok")
    # random bit flips outside section 10 (the zkey's MPC transcript, which no prover reads)
    spans = [(_offset(data, s)[0] - 12, _offset(data, s)[0] + _offset(data, s)[1]) for s, _ in secs
             if not (role == "zkey" and s == 10)]
    for _ in range(flips):
        lo, hi = spans[rng.randrange(len(spans))]
        pos = rng.randrange(lo, hi)
        blob = bytearray(data)
        blob[pos] ^= 1 << rng.randrange(8)
        bad(f"bit flip at {pos}", bytes(blob), expect="fail_or_ok")
    return out


# -- the zkey's meaning ------------------------------------------------------------------


def zkey_cases(data: bytes, curve_points) -> list[Case]:
    """Structurally valid but wrong keys, and header fields out of range."""
    from zktensor.groth16.formats.points import codec
    from zktensor.groth16.formats.zkey import read_zkey
    out = []
    _, _, secs = sections(data)
    hdr = dict(secs)[2]
    n8q = struct.unpack_from("<I", hdr, 0)[0]
    n8r_at = 4 + n8q
    n8r = struct.unpack_from("<I", hdr, n8r_at)[0]
    nv_at = n8r_at + 4 + n8r
    g1, g2 = 2 * n8q, 4 * n8q
    pts_at = nv_at + 12                                    # alpha_1 beta_1 beta_2 gamma_2 delta_1 delta_2
    at = {"alpha_1": pts_at, "beta_1": pts_at + g1, "beta_2": pts_at + 2 * g1,
          "gamma_2": pts_at + 2 * g1 + g2, "delta_1": pts_at + 2 * g1 + 2 * g2,
          "delta_2": pts_at + 3 * g1 + 2 * g2}

    def case(name, blob, command="prove", expect="fail", blame="zkey"):
        out.append(Case(f"zkey: {name}", command, {"zkey": blob}, expect, blame))

    def hdr_edit(off, value):
        return _with(data, 2, lambda b: _put(b, off, value))
    case("protocol plonk", _with(data, 1, lambda b: _put(b, 0, _u32(2))))
    case("n8q 33", hdr_edit(0, _u32(33)))
    case("q + 2", hdr_edit(4, (int.from_bytes(hdr[4:4 + n8q], "little") + 2).to_bytes(n8q, "little")))
    case("r + 2", hdr_edit(n8r_at + 4, (int.from_bytes(hdr[n8r_at + 4:n8r_at + 4 + n8r], "little") + 2)
                           .to_bytes(n8r, "little")))
    case("nVars 0xFFFFFFFF", hdr_edit(nv_at, _u32(0xFFFFFFFF)))
    case("nPublic 0xFFFFFFFF", hdr_edit(nv_at + 4, _u32(0xFFFFFFFF)))
    dom = struct.unpack_from("<I", hdr, nv_at + 8)[0]
    case("domainSize 3", hdr_edit(nv_at + 8, _u32(3)))
    case("domainSize 0", hdr_edit(nv_at + 8, _u32(0)))
    case("domainSize doubled", hdr_edit(nv_at + 8, _u32(2 * dom)))
    z = read_zkey_bytes(data, read_zkey)
    Cg1, Cg2 = codec(z.curve, "g1"), codec(z.curve, "g2")
    H = dict(secs)[9]
    case("domain doubled, H resized", _with(hdr_edit(nv_at + 8, _u32(2 * dom)), 9, lambda b: b + b))
    for name in at:
        size = g1 if name.endswith("_1") else g2
        case(f"{name} = identity", hdr_edit(at[name], bytes(size)))
        case(f"{name} coordinate >= q", hdr_edit(at[name], b"\xff" * n8q))
        case(f"{name} off the curve", hdr_edit(at[name] + n8q - 1, bytes([hdr[at[name] + n8q - 1] ^ 1])))
    T = curve_points["g2_outside"]
    case("delta_2 outside the subgroup", hdr_edit(at["delta_2"], Cg2.encode(T)))
    case("beta_2 outside the subgroup", hdr_edit(at["beta_2"], Cg2.encode(T)))
    case("B2 point 1 outside the subgroup", _with(data, 7, lambda b: _put(b, g2, Cg2.encode(T))))
    case("B2 point 1 outside the subgroup, --r1cs", _with(data, 7, lambda b: _put(b, g2, Cg2.encode(T))),
         "prove_r1cs")
    case("H points 0 and 1 swapped", _with(data, 9, lambda b: _put(_put(b, 0, H[g1:2 * g1]), g1, H[:g1])))
    case("H points 0 and 1 swapped, --r1cs",
         _with(data, 9, lambda b: _put(_put(b, 0, H[g1:2 * g1]), g1, H[:g1])), "prove_r1cs")
    case("A point 2 = identity", _with(data, 5, lambda b: _put(b, 2 * g1, bytes(g1))))
    case("A point 2 = identity, --r1cs", _with(data, 5, lambda b: _put(b, 2 * g1, bytes(g1))), "prove_r1cs")
    case("B1 point 1 off the curve", _with(data, 6, lambda b: _put(b, g1, Cg1.encode(None)[:-1] + b"\x01")))
    case("C point 0 >= q", _with(data, 8, lambda b: _put(b, 0, b"\xff" * g1)))
    rec = 12 + n8r
    coefs = dict(secs)[4]
    first = 4
    case("coefficient 0 changed", _with(data, 4, lambda b: _put(b, first + 12, bytes([coefs[first + 12] ^ 1]))))
    case("coefficient 0 changed, --r1cs",
         _with(data, 4, lambda b: _put(b, first + 12, bytes([coefs[first + 12] ^ 1]))), "prove_r1cs")
    case("coefficient 0 >= r", _with(data, 4, lambda b: _put(b, first + 12, b"\xff" * n8r)))
    case("coefficient count + 1", _with(data, 4, lambda b: _put(b, 0, _u32(len(coefs) // rec + 1))))
    case("coefficient signal out of range", _with(data, 4, lambda b: _put(b, first + 8, _u32(0xFFFFFF))))
    case("coefficient matrix 2", _with(data, 4, lambda b: _put(b, first, _u32(2))))
    case("contributions section cut to 10 bytes", _with(data, 10, lambda b: b[:10]))
    # legal: no section 10 (snarkjs's prover does not need it)
    m, v, ss = sections(data)
    case("no section 10 (legal)", container(m, v, [s for s in ss if s[0] != 10]), expect="ok")
    return out


def read_zkey_bytes(data: bytes, read_zkey):
    import os
    import tempfile
    fd, path = tempfile.mkstemp(suffix=".zkey")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        z = read_zkey(path)
        return type("K", (), {"curve": z.curve})
    finally:
        os.unlink(path)


# -- witnesses and constraint systems ----------------------------------------------------


def wtns_cases(data: bytes, prime: int, other_wtns: bytes) -> list[Case]:
    out = []
    _, _, secs = sections(data)
    n8 = struct.unpack_from("<I", dict(secs)[1], 0)[0]

    def case(name, blob, command="prove", expect="fail", blame="wtns"):
        out.append(Case(f"wtns: {name}", command, {"wtns": blob}, expect, blame))
    case("n8 0", _with(data, 1, lambda b: _put(b, 0, _u32(0))))
    case("n8 48", _with(data, 1, lambda b: _put(b, 0, _u32(48))))
    case("prime + 2", _with(data, 1, lambda b: _put(b, 4, (prime + 2).to_bytes(n8, "little"))))
    case("count + 1", _with(data, 1, lambda b: _put(b, 4 + n8, _u32(struct.unpack_from("<I", b, 4 + n8)[0] + 1))))
    case("count 0xFFFFFFFF", _with(data, 1, lambda b: _put(b, 4 + n8, _u32(0xFFFFFFFF))))
    case("value 1 >= prime", _with(data, 2, lambda b: _put(b, n8, prime.to_bytes(n8, "little"))))
    case("w[0] = 2", _with(data, 2, lambda b: _put(b, 0, (2).to_bytes(n8, "little"))))
    last = lambda b: _put(b, len(b) - n8, ((int.from_bytes(b[-n8:], "little") + 1) % prime).to_bytes(n8, "little"))  # noqa: E731
    case("last value + 1 (unsatisfied)", _with(data, 2, last))
    case("last value + 1 (unsatisfied), --r1cs", _with(data, 2, last), "prove_r1cs")
    case("another circuit's witness", other_wtns)
    case("version 1 (legal: same layout)", data[:4] + _u32(1) + data[8:], expect="ok")
    return out


def r1cs_cases(data: bytes, other_r1cs: bytes) -> list[Case]:
    out = []
    _, _, secs = sections(data)
    hdr = dict(secs)[1]
    n8 = struct.unpack_from("<I", hdr, 0)[0]
    nc_at = 4 + n8 + 16 + 8

    def case(name, blob, expect="fail", blame="r1cs"):
        out.append(Case(f"r1cs: {name}", "prove_r1cs", {"r1cs": blob}, expect, blame))
    case("constraints emptied", _with(_with(data, 1, lambda b: _put(b, nc_at, _u32(0))), 2, lambda b: b[:0]))
    case("nConstraints + 1", _with(data, 1, lambda b: _put(b, nc_at, _u32(struct.unpack_from("<I", b, nc_at)[0] + 1))))
    case("nWires 0", _with(data, 1, lambda b: _put(b, 4 + n8, _u32(0))))
    case("prime + 2", _with(data, 1, lambda b: _put(b, 4, (int.from_bytes(hdr[4:4 + n8], "little") + 2)
                                                    .to_bytes(n8, "little"))))
    cons = dict(secs)[2]
    # first combination's first term: count u32, wire u32, coefficient n8
    case("first coefficient changed (stale)", _with(data, 2, lambda b: _put(b, 8, bytes([cons[8] ^ 2]))))
    case("first wire out of range", _with(data, 2, lambda b: _put(b, 4, _u32(0xFFFFFF))))
    case("another circuit's r1cs", other_r1cs)
    m, v, ss = sections(data)
    case("no wire map (legal)", container(m, v, [s for s in ss if s[0] != 3]), expect="ok")
    return out


# -- JSON ------------------------------------------------------------------------------------


def json_cases(files: dict) -> list[Case]:
    """proof.json, public.json, verification_key.json made hostile, malformed or wrong."""
    out = []
    hostile = {
        "empty": b"", "not JSON": b"{", "binary": bytes(range(256)), "not UTF-8": b'["\xff"]',
        "BOM": b"\xef\xbb\xbf[]", "deep nesting": b"[" * 200000 + b"]" * 200000,
        "deep unclosed": b"{\"a\":" * 50000, "NaN": b"[NaN]", "null": b"null", "a number": b"5",
        "5000-digit number": b"[" + b"9" * 5000 + b"]", "5000-digit string": b'["' + b"9" * 5000 + b'"]',
        "huge exponent": b"[1e99999]", "object of nothing": b"{}", "list of lists": b"[[[[]]]]",
    }
    for role in ("proof", "public", "vk"):
        for name, blob in hostile.items():
            out.append(Case(f"{role}: {name}", "verify", {role: blob}, "fail", role))
    proof = json.loads(files["proof"])
    vk = json.loads(files["vk"])
    pub = json.loads(files["public"])

    def jcase(role, name, doc, expect="fail"):
        out.append(Case(f"{role}: {name}", "verify", {role: json.dumps(doc).encode()}, expect, role))
    for key in ("pi_a", "pi_b", "pi_c"):
        jcase("proof", f"no {key}", {k: v for k, v in proof.items() if k != key})
        jcase("proof", f"{key} a string", dict(proof, **{key: "1"}))
    jcase("proof", "pi_a[0] a JSON number", dict(proof, pi_a=[int(proof["pi_a"][0])] + proof["pi_a"][1:]))
    jcase("proof", "pi_a z = 2", dict(proof, pi_a=proof["pi_a"][:2] + ["2"]))
    jcase("proof", "curve bls12381", dict(proof, curve="bls12381"))
    jcase("proof", "protocol plonk", dict(proof, protocol="plonk"))
    jcase("proof", "pi_b flattened", dict(proof, pi_b=sum(proof["pi_b"], [])))
    jcase("public", "one signal too many", pub + ["1"])
    jcase("public", "a negative signal", ["-1"] + pub[1:] if pub else ["-1"])
    jcase("public", "a float", [1.5] + pub[1:])
    jcase("public", "an object", {"0": pub})
    jcase("vk", "nPublic + 1", dict(vk, nPublic=vk["nPublic"] + 1))
    jcase("vk", "nPublic -1", dict(vk, nPublic=-1))
    jcase("vk", "nPublic 2^40", dict(vk, nPublic=2 ** 40))
    jcase("vk", "IC short", dict(vk, IC=vk["IC"][:-1]))
    jcase("vk", "curve unknown", dict(vk, curve="bn999"))
    jcase("vk", "no vk_delta_2", {k: v for k, v in vk.items() if k != "vk_delta_2"})
    jcase("vk", "delta_2 = gamma_2 (wrong key)", dict(vk, vk_delta_2=vk["vk_gamma_2"]))
    jcase("vk", "alpha_1 off the curve", dict(vk, vk_alpha_1=[vk["vk_alpha_1"][0], "5", "1"]))
    # legal encodings snarkjs accepts
    jcase("proof", "no curve (rapidsnark, legal)", {k: v for k, v in proof.items() if k != "curve"}, "ok")
    jcase("proof", "hex coordinates (legal)", dict(proof, pi_c=[hex(int(c)) for c in proof["pi_c"]]), "ok")
    jcase("public", "leading zeros (legal)", ["000" + s for s in pub], "ok")
    out.append(Case("proof: one line, no indent (legal)", "verify",
                    {"proof": json.dumps(proof, separators=(",", ":")).encode()}, "ok", "proof"))
    return out


# -- output paths --------------------------------------------------------------------------


def path_cases() -> list[Case]:
    """Output paths that must be refused before any work (roles name the inputs)."""
    return [Case("paths: proof = the zkey", "paths", outputs=("@zkey", "public.json"), blame="@zkey"),
            Case("paths: public = the witness", "paths", outputs=("proof.json", "@wtns"), blame="@wtns"),
            Case("paths: public = the r1cs", "paths", outputs=("proof.json", "@r1cs"), blame="@r1cs"),
            Case("paths: proof = public", "paths", outputs=("proof.json", "proof.json"), blame="proof.json"),
            Case("paths: proof through ./ = public", "paths", outputs=("proof.json", "./sub/../proof.json"),
                 blame="proof.json"),
            Case("paths: link to the zkey", "paths", outputs=("@link", "public.json"), blame="@link"),
            Case("paths: empty proof path", "paths", outputs=("", "public.json"), blame="proof path"),
            Case("paths: a directory", "paths", outputs=("sub", "public.json"), blame="sub"),
            Case("paths: missing directory", "paths", outputs=("nodir/proof.json", "public.json"),
                 blame="nodir/proof.json"),
            Case("paths: /dev/null", "paths", outputs=("/dev/null", "public.json"), blame="/dev/null"),
            Case("paths: unwritable directory", "paths", outputs=("@unwritable/proof.json", "public.json"),
                 blame="@unwritable/proof.json"),
            Case("paths: under a regular file", "paths", outputs=("vk.json/proof.json", "public.json"),
                 blame="vk.json/proof.json")]


# -- zktensor setup ----------------------------------------------------------------------------


def setup_cases(data: bytes, other_r1cs: bytes, rng: random.Random, flips: int) -> list[Case]:
    """`zktensor setup` reads one file, the .r1cs: every container case, the header's meaning,
    and its output paths. A circuit that reads well is a circuit: setup makes its key ("ok")."""
    out = container_cases("r1cs", data, "setup", rng, flips)
    _, _, secs = sections(data)
    hdr = dict(secs)[1]
    n8 = struct.unpack_from("<I", hdr, 0)[0]
    nc_at = 4 + n8 + 16 + 8

    def case(name, blob, expect="fail"):
        out.append(Case(f"r1cs: {name}", "setup", {"r1cs": blob}, expect, "r1cs"))
    case("nConstraints + 1", _with(data, 1, lambda b: _put(b, nc_at, _u32(struct.unpack_from("<I", b, nc_at)[0] + 1))))
    case("nWires 0", _with(data, 1, lambda b: _put(b, 4 + n8, _u32(0))))
    case("n8 33", _with(data, 1, lambda b: _put(b, 0, _u32(33))))
    case("prime + 2", _with(data, 1, lambda b: _put(b, 4, (int.from_bytes(hdr[4:4 + n8], "little") + 2)
                                                    .to_bytes(n8, "little"))))
    case("first wire out of range", _with(data, 2, lambda b: _put(b, 4, _u32(0xFFFFFF))))
    case("first term count 2^32-1", _with(data, 2, lambda b: _put(b, 0, _u32(0xFFFFFFFF))))
    case("first coefficient 5 (another circuit)",
         _with(data, 2, lambda b: _put(b, 8, (5).to_bytes(n8, "little"))), expect="ok")
    case("another circuit's r1cs", other_r1cs, expect="ok")
    out += [Case("setup paths: key = the r1cs", "setup_paths", outputs=("@r1cs", "vk_out.json"), blame="@r1cs"),
            Case("setup paths: vk = the r1cs", "setup_paths", outputs=("key.zkey", "@r1cs"), blame="@r1cs"),
            Case("setup paths: vk = key", "setup_paths", outputs=("key.zkey", "key.zkey"), blame="key.zkey"),
            Case("setup paths: missing directory", "setup_paths", outputs=("nodir/key.zkey", "vk_out.json"),
                 blame="nodir/key.zkey"),
            Case("setup paths: a directory", "setup_paths", outputs=("key.zkey", "sub"), blame="sub"),
            Case("setup paths: unwritable directory", "setup_paths",
                 outputs=("key.zkey", "@unwritable/vk.json"), blame="@unwritable/vk.json"),
            Case("setup paths: under a regular file", "setup_paths", outputs=("vk.json/key.zkey", "vk_out.json"),
                 blame="vk.json/key.zkey")]
    for c in out:
        c.name = "setup " + c.name if not c.name.startswith("setup") else c.name
    return out


def all_cases(fx: dict, other: dict, curve_points, flips: int = 12) -> list[Case]:
    """Every case for one circuit's files ``fx`` (role -> bytes), ``other`` another
    circuit's (for mismatches)."""
    from zktensor.algebra import field
    rng = random.Random(SEED)
    prime = field("bn254.fr").p
    cases = []
    cases += container_cases("zkey", fx["zkey"], "prove", rng, flips)
    cases += zkey_cases(fx["zkey"], curve_points)
    cases += container_cases("wtns", fx["wtns"], "prove", rng, flips // 2)
    cases += wtns_cases(fx["wtns"], prime, other["wtns"])
    cases += container_cases("r1cs", fx["r1cs"], "prove_r1cs", rng, flips // 2)
    cases += r1cs_cases(fx["r1cs"], other["r1cs"])
    cases += json_cases(fx)
    cases += path_cases()
    cases += setup_cases(fx["r1cs"], other["r1cs"], rng, flips // 2)
    return cases
