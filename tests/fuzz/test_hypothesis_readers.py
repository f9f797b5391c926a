"""Property-based fuzzing of the binary and JSON readers (hypothesis), for long runs.

    ZKTENSOR_FUZZ_EXAMPLES=20000 pytest tests/fuzz/test_hypothesis_readers.py

Every reader, given any bytes derived from a real file (bytes overwritten, inserted,
deleted, the file cut), either returns or raises FormatError whose one-line message
starts with the file's name: never another exception, never a hang. In CI (no
variable set) each property runs a few examples only, derandomized.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from zktensor.groth16.formats import FormatError, read_proof, read_public, read_r1cs, read_vk, read_wtns, read_zkey  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ZKT_FIXTURES_BUILD", ROOT / "tests" / "fixtures" / "build")) / "multiplier"
EXAMPLES = int(os.environ.get("ZKTENSOR_FUZZ_EXAMPLES", "25"))
LONG = "ZKTENSOR_FUZZ_EXAMPLES" in os.environ

READERS = {"circuit_final.zkey": read_zkey, "witness.wtns": read_wtns, "multiplier.r1cs": read_r1cs,
           "proof.json": read_proof, "public.json": read_public, "verification_key.json": read_vk}


def _settings():
    return settings(max_examples=EXAMPLES, deadline=None, derandomize=not LONG, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


edits = st.lists(st.tuples(st.sampled_from(["set", "insert", "delete", "cut"]), st.integers(0, 1 << 20),
                           st.binary(min_size=1, max_size=16)), min_size=1, max_size=6)


def mutate(data: bytes, ops) -> bytes:
    b = bytearray(data)
    for op, pos, blob in ops:
        at = pos % (len(b) + 1)
        if op == "set":
            b[at:at + len(blob)] = blob
        elif op == "insert":
            b[at:at] = blob
        elif op == "delete":
            del b[at:at + len(blob)]
        else:
            del b[at:]
    return bytes(b)


@pytest.mark.snarkjs
@pytest.mark.parametrize("name", list(READERS))
def test_reader_returns_or_raises_format_error(name, tmp_path):
    src = BUILD / name
    if not src.exists():
        pytest.skip("fixtures not built (scripts/fixtures.sh)")
    data = src.read_bytes()
    path = tmp_path / name

    @_settings()
    @given(edits)
    def prop(ops):
        path.write_bytes(mutate(data, ops))
        try:
            READERS[name](path)
        except FormatError as e:
            msg = str(e)
            assert msg.startswith(str(path)) and "\n" not in msg, msg
    prop()
