"""trace: a Python function over field values -> the `field` dialect (IRDL from the op tables)."""
import pytest

from compiler_support import P, XS, YS, field_stage, parsed, run
from zktensor.ir import dialects, ec, irdl
from zktensor.ir.program import FIELD_OPS, FIELD_SIGNATURES


def test_trace_prints_field_dialect():
    text = str(field_stage(lambda a, b, c: a * b - c * c, 3))
    assert text.count('"field.mul"') == 2 and text.count('"field.sub"') == 1
    assert '!field.elem<"bn254.fr">' in text


def test_irdl_verifier_rejects_wrong_types():
    with pytest.raises(ValueError, match="invalid IR"):
        parsed('func.func @f(%a: i32) -> i32 {\n %b = "field.neg"(%a) : (i32) -> i32\n return %b : i32\n}')


def test_irdl_is_generated_from_the_op_tables():
    """Every op of the tables is declared, with the operands the tracer gives it."""
    for op, sig in FIELD_SIGNATURES.items():
        assert f"irdl.operation @{op} {{" in dialects.FIELD_IRDL
        assert FIELD_OPS[op] == len(sig[0])
    assert 'irdl.attributes {"exponent" = %s}' in dialects.FIELD_IRDL
    for op, sig in ec.EC_SIGNATURES.items():
        assert f"irdl.operation @{op} {{" in ec.EC_IRDL
        assert ec.EC_OPS[op] == irdl.arity(sig)
    assert "irdl.operands(coords: variadic %c)" in ec.EC_IRDL and ec.EC_OPS["make"] is None


def test_traced_program_runs():
    (got,) = run(lambda a, b, c: a * b - c * c, [XS, YS, XS])
    assert got == [(x * y - x * x) % P for x, y in zip(XS, YS)]
