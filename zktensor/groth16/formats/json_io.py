"""snarkjs's JSON files: ``proof.json``, ``public.json``, ``verification_key.json``.

Layout, as snarkjs 0.7 writes them (``cli.js``: ``bfj.write(name,
stringifyBigInts(obj), {space: 1})``):

* numbers are decimal strings, except ``nPublic`` (a JSON number);
* a G1 point is ``[x, y, "1"]``, a G2 point ``[[x0, x1], [y0, y1], ["1", "0"]]``
  (affine, with the projective z); the point at infinity is ``["0", "1", "0"]``
  resp. ``[["0", "0"], ["1", "0"], ["0", "0"]]``;
* the curve is named "bn128" or "bls12381";
* bfj's layout is JSON.stringify's with a one-space indent, except that an empty
  array or object is written open and closed on two lines ("[\\n]"), and there is
  no final newline. :func:`dumps` reproduces it byte for byte.

Reading is about shape: a file that is not JSON, lacks a key, has the wrong
nesting or a non-number where a number belongs raises :class:`FormatError`
naming the file. What is read is what snarkjs reads: numbers as decimal (or 0x)
strings; a JSON number literal where a coordinate belongs is refused (snarkjs
finds such a proof invalid), one in public.json is read as JavaScript reads it (a
double: exact up to 2^53); a proof may omit "curve" (rapidsnark's does) and
"protocol". Hostile files are refused before they are parsed: more than
``MAX_JSON_BYTES``, nesting deeper than ``MAX_JSON_DEPTH``; a number of more than
``MAX_DIGITS`` digits is refused without being converted. Whether numbers are in range and points on the curve is the
verifier's question (a wrong proof is not a malformed file).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from ...runtime.atomic import atomic_write
from ...runtime.json_depth import nesting_depth
from .curves import SNARKJS_NAME, curve_from_name
from .errors import FormatError

# -- bfj-compatible serialisation ---------------------------------------------------


def dumps(obj, indent: int = 1) -> str:
    """``obj`` as snarkjs writes it (bfj with ``space: 1``)."""
    out: list[str] = []
    _dump(obj, 0, " " * indent, out)
    return "".join(out)


def _dump(v, level: int, pad: str, out: list) -> None:
    if isinstance(v, dict):
        items = list(v.items())
        out.append("{\n")
        for i, (k, x) in enumerate(items):
            out.append(pad * (level + 1) + _str(str(k)) + ": ")
            _dump(x, level + 1, pad, out)
            out.append(",\n" if i + 1 < len(items) else "\n")
        out.append(pad * level + "}")
    elif isinstance(v, (list, tuple)):
        out.append("[\n")
        for i, x in enumerate(v):
            out.append(pad * (level + 1))
            _dump(x, level + 1, pad, out)
            out.append(",\n" if i + 1 < len(v) else "\n")
        out.append(pad * level + "]")
    elif isinstance(v, str):
        out.append(_str(v))
    elif v is None or isinstance(v, (bool, int, float)):
        out.append(json.dumps(v))
    else:
        raise TypeError(f"cannot write {type(v).__name__} as JSON")


def _str(s: str) -> str:
    # JSON.stringify escapes only quotes, backslashes and control characters.
    return json.dumps(s, ensure_ascii=False)


def write_json(path, obj) -> None:
    """Write ``obj`` in snarkjs's layout, atomically."""
    from ..outputs import OutputError, check_output
    text = dumps(obj)
    name = check_output(path)         # errors name the user's path, never the temporary file
    try:
        with atomic_write(name, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise OutputError(f"{name}: cannot write ({e.strerror or e})") from None


MAX_JSON_BYTES = int(os.environ.get("ZKTENSOR_MAX_JSON_BYTES", 256 << 20))
"""Larger JSON files are refused before they are read (a verification key with a
million public signals is ~200 MiB)."""
MAX_JSON_DEPTH = 32
"""snarkjs's files nest at most 4 deep; deeper ones are refused before parsing
(`runtime.json_depth` says why)."""
MAX_DIGITS = 200
"""Significant digits a number may have (2^384 has 116): longer ones are refused
without converting them (Python's int() has a 4300-digit limit and is quadratic)."""


class JsonNumber(int):
    """A JSON integer literal (``5``, not ``"5"``): an int to every other reader, but
    snarkjs reads coordinates only from strings, so ``parse_int`` refuses these."""


class HugeJsonNumber(str):
    """A JSON integer literal of more than MAX_DIGITS digits, kept as text (not converted)."""


def _json_number(text: str):
    if len(text.lstrip("-0")) > MAX_DIGITS:
        return HugeJsonNumber(text)
    return JsonNumber(text)


def _no_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def loads(text: str, name: str):
    """JSON text -> Python, for a file called ``name``: every problem one FormatError naming it."""
    if nesting_depth(text) > MAX_JSON_DEPTH:
        raise FormatError(f"{name}: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text, parse_int=_json_number, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise FormatError(f"{name}: not valid JSON ({e})") from None
    except (ValueError, RecursionError) as e:
        raise FormatError(f"{name}: not valid JSON ({e})") from None


def read_json(path):
    name = os.fsdecode(path)
    try:
        with open(name, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_JSON_BYTES:
                raise FormatError(f"{name}: {size} bytes, more than the {MAX_JSON_BYTES} a JSON input "
                                  "may have (ZKTENSOR_MAX_JSON_BYTES)")
            data = f.read(MAX_JSON_BYTES + 1)
    except OSError as e:
        raise FormatError(f"{name}: cannot read ({e.strerror or e})") from None
    if len(data) > MAX_JSON_BYTES:
        raise FormatError(f"{name}: more than the {MAX_JSON_BYTES} bytes a JSON input may have")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"{name}: not valid JSON (not UTF-8: byte {e.start})") from None
    return loads(text, name)


# -- numbers and points -----------------------------------------------------------

_DEC = re.compile(r"[0-9]+")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+")


def parse_int(v, where: str) -> int:
    """A number as snarkjs's ``unstringifyBigInts`` reads it: a decimal (or 0x-hex)
    string. A JSON number literal (``JsonNumber``) is refused, as snarkjs refuses it;
    a Python int (from the API, not from a file) is taken as it is."""
    if isinstance(v, HugeJsonNumber):
        raise FormatError(f"{where}: a number of {len(v)} digits, out of range")
    if isinstance(v, JsonNumber):
        raise FormatError(f"{where}: expected a decimal number string, got the JSON number {_short(v)} "
                          "(snarkjs writes numbers as strings)")
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        digits = v[2:] if _HEX.fullmatch(v) else v if _DEC.fullmatch(v) else None
        if digits is not None:
            if len(digits.lstrip("0")) > MAX_DIGITS:
                raise FormatError(f"{where}: a number of {len(digits)} digits, out of range")
            return int(digits.lstrip("0") or "0", 16 if digits is not v else 10)
    raise FormatError(f"{where}: expected a decimal number string, got {_short(v)}")


def parse_count(v, where: str) -> int:
    """A count such as nPublic: a JSON number (as snarkjs writes it) or a decimal string."""
    if isinstance(v, JsonNumber):
        v = int(v)
    n = parse_int(v, where)
    if n < 0 or n >= 1 << 32:
        raise FormatError(f"{where}: {n} is out of range")
    return n


def _list(v, n: int, where: str) -> list:
    if not isinstance(v, list) or len(v) != n:
        raise FormatError(f"{where}: expected a list of {n}, got {_short(v)}")
    return v


def _short(v) -> str:
    try:
        s = str(v) if isinstance(v, (JsonNumber, HugeJsonNumber)) else json.dumps(v)
    except (TypeError, ValueError, RecursionError):
        s = type(v).__name__
    return s if len(s) < 80 else s[:77] + "..."


def g1_from_json(v, where: str):
    """``[x, y, z]`` -> (x, y), or None for z = 0 (snarkjs writes affine points, z = 1)."""
    x, y, z = (parse_int(c, f"{where}[{i}]") for i, c in enumerate(_list(v, 3, where)))
    if z == 0:
        return None
    if z != 1:
        raise FormatError(f"{where}: z = {z}; only affine points (z = 1) or infinity (z = 0) are accepted")
    return (x, y)


def g2_from_json(v, where: str):
    c = [[parse_int(e, f"{where}[{i}][{j}]") for j, e in enumerate(_list(pair, 2, f"{where}[{i}]"))]
         for i, pair in enumerate(_list(v, 3, where))]
    if c[2] == [0, 0]:
        return None
    if c[2] != [1, 0]:
        raise FormatError(f"{where}: z = {c[2]}; only affine points (z = [1, 0]) or infinity are accepted")
    return ((c[0][0], c[0][1]), (c[1][0], c[1][1]))


def g1_to_json(P) -> list:
    if P is None:
        return ["0", "1", "0"]
    return [str(P[0]), str(P[1]), "1"]


def g2_to_json(P) -> list:
    if P is None:
        return [["0", "0"], ["1", "0"], ["0", "0"]]
    (x0, x1), (y0, y1) = P
    return [[str(x0), str(x1)], [str(y0), str(y1)], ["1", "0"]]


def _obj(d, keys, where: str) -> dict:
    if not isinstance(d, dict):
        raise FormatError(f"{where}: expected a JSON object, got {_short(d)}")
    missing = [k for k in keys if k not in d]
    if missing:
        raise FormatError(f"{where}: missing {', '.join(missing)}")
    return d


def _protocol_and_curve(d, where: str) -> str | None:
    """The curve named by ``d`` (None when it names none, as rapidsnark's proof.json)."""
    if "protocol" in d and d["protocol"] != "groth16":
        raise FormatError(f"{where}: protocol {_short(d['protocol'])} is not groth16")
    if "curve" not in d:
        return None
    try:
        return curve_from_name(d["curve"])
    except (ValueError, TypeError):
        raise FormatError(f"{where}: unknown curve {_short(d['curve'])} (expected bn128 or bls12381)") from None


# -- proof.json ---------------------------------------------------------------------


@dataclass(frozen=True)
class Proof:
    curve: str | None   # "bn254" | "bls12_381"; None: the file named none (rapidsnark's)
    pi_a: tuple    # G1
    pi_b: tuple    # G2
    pi_c: tuple    # G1
    protocol: str = "groth16"


def proof_from_json(d, where: str = "proof") -> Proof:
    """snarkjs's proof.json, or rapidsnark's, which names no curve (the key's is meant)."""
    d = _obj(d, ("pi_a", "pi_b", "pi_c"), where)
    curve = _protocol_and_curve(d, where)
    return Proof(curve, g1_from_json(d["pi_a"], f"{where}: pi_a"),
                 g2_from_json(d["pi_b"], f"{where}: pi_b"), g1_from_json(d["pi_c"], f"{where}: pi_c"))


def proof_to_json(p: Proof) -> dict:
    d = {"pi_a": g1_to_json(p.pi_a), "pi_b": g2_to_json(p.pi_b), "pi_c": g1_to_json(p.pi_c),
         "protocol": "groth16"}
    if p.curve is not None:
        d["curve"] = SNARKJS_NAME[p.curve]
    return d


def read_proof(path) -> Proof:
    return proof_from_json(read_json(path), os.fsdecode(path))


def write_proof(path, proof: Proof) -> None:
    write_json(path, proof_to_json(proof))


# -- public.json --------------------------------------------------------------------


def _js_integer(v, where: str) -> int:
    """A JSON number literal as snarkjs's verifier reads a public signal: JavaScript's
    JSON.parse makes it a double (rounded to nearest), which must be a whole number."""
    if isinstance(v, HugeJsonNumber):
        raise FormatError(f"{where}: a number of {len(v)} digits, out of range")
    if isinstance(v, JsonNumber):
        v = float(int(v))
    if v != v or v in (float("inf"), float("-inf")) or not v.is_integer():
        raise FormatError(f"{where}: {_short(v)} is not an integer")
    return int(v)


def public_from_json(d, where: str = "public signals") -> list[int]:
    """public.json's signals: decimal strings, or (as snarkjs takes them) JSON numbers,
    read as JavaScript does, so a large one loses its low digits there as here."""
    if not isinstance(d, list):
        raise FormatError(f"{where}: expected a list of public signals, got {_short(d)}")
    return [_js_integer(v, f"{where}[{i}]") if isinstance(v, (JsonNumber, HugeJsonNumber, float)) else
            parse_int(v, f"{where}[{i}]") for i, v in enumerate(d)]


def public_to_json(values) -> list[str]:
    return [str(int(v)) for v in values]


def read_public(path) -> list[int]:
    return public_from_json(read_json(path), os.fsdecode(path))


def write_public(path, values) -> None:
    write_json(path, public_to_json(values))


# -- verification_key.json ----------------------------------------------------------


@dataclass(frozen=True)
class VerificationKey:
    curve: str
    n_public: int
    alpha_1: tuple
    beta_2: tuple
    gamma_2: tuple
    delta_2: tuple
    IC: tuple                   # n_public + 1 G1 points
    alphabeta_12: tuple | None  # e(alpha_1, beta_2) in snarkjs's Fq12 layout (2×3×2 ints)
    protocol: str = "groth16"


def vk_from_json(d, where: str = "verification key") -> VerificationKey:
    d = _obj(d, ("protocol", "curve", "nPublic", "vk_alpha_1", "vk_beta_2", "vk_gamma_2",
                 "vk_delta_2", "IC"), where)
    if d["protocol"] != "groth16":
        raise FormatError(f"{where}: protocol {_short(d['protocol'])} is not groth16")
    curve = _protocol_and_curve(d, where)
    n_public = parse_count(d["nPublic"], f"{where}: nPublic")
    ic = d["IC"]
    if not isinstance(ic, list) or len(ic) != n_public + 1:
        raise FormatError(f"{where}: IC must hold nPublic + 1 = {n_public + 1} points, "
                          f"has {len(ic) if isinstance(ic, list) else _short(ic)}")
    ab = d.get("vk_alphabeta_12")
    if ab is not None:
        ab = tuple(tuple(tuple(parse_int(e, f"{where}: vk_alphabeta_12[{i}][{j}][{k}]")
                               for k, e in enumerate(_list(c, 2, f"{where}: vk_alphabeta_12[{i}][{j}]")))
                         for j, c in enumerate(_list(half, 3, f"{where}: vk_alphabeta_12[{i}]")))
                   for i, half in enumerate(_list(ab, 2, f"{where}: vk_alphabeta_12")))
    return VerificationKey(
        curve, n_public,
        g1_from_json(d["vk_alpha_1"], f"{where}: vk_alpha_1"),
        g2_from_json(d["vk_beta_2"], f"{where}: vk_beta_2"),
        g2_from_json(d["vk_gamma_2"], f"{where}: vk_gamma_2"),
        g2_from_json(d["vk_delta_2"], f"{where}: vk_delta_2"),
        tuple(g1_from_json(P, f"{where}: IC[{i}]") for i, P in enumerate(ic)),
        ab)


def vk_to_json(vk: VerificationKey) -> dict:
    """snarkjs's key order (``zkey_export_verificationkey.js``)."""
    d = {"protocol": "groth16", "curve": SNARKJS_NAME[vk.curve], "nPublic": vk.n_public,
         "vk_alpha_1": g1_to_json(vk.alpha_1), "vk_beta_2": g2_to_json(vk.beta_2),
         "vk_gamma_2": g2_to_json(vk.gamma_2), "vk_delta_2": g2_to_json(vk.delta_2)}
    if vk.alphabeta_12 is not None:
        d["vk_alphabeta_12"] = [[[str(e) for e in c] for c in half] for half in vk.alphabeta_12]
    d["IC"] = [g1_to_json(P) for P in vk.IC]
    return d


def read_vk(path) -> VerificationKey:
    return vk_from_json(read_json(path), os.fsdecode(path))


def write_vk(path, vk: VerificationKey) -> None:
    write_json(path, vk_to_json(vk))
