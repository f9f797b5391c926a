"""fuse-elementwise: `field` -> `field` (@kernel_N functions and a @main calling them)."""
from compiler_support import P, XS, YS, field_stage, parsed, run
from zktensor.passes import canonicalize, field_io, fuse_elementwise


def test_fuse_elementwise_outlines_one_kernel():
    text = str(field_stage(lambda a, b, c: a * b - c * c, 3, [canonicalize, fuse_elementwise]))
    assert "func.func @kernel_0" in text and 'zktensor.kind = "elementwise"' in text
    assert "call @kernel_0" in text and "func.func @main" in text


def test_fuse_elementwise_passes_inputs_through():
    text = str(field_stage(lambda a, b: (a * b, b), 2, [canonicalize, fuse_elementwise]))
    assert "call @kernel_0(%arg0, %arg1)" in text


def _chain(a, b):
    x = a * b
    y = x * x + a       # a square and an add
    z = y * b
    w = z * z - x
    return w * a


def _chain_value(x, y):
    xx = x * y % P
    yy = (xx * xx + x) % P
    zz = yy * y % P
    return (zz * zz - xx) * x % P


def test_fuse_elementwise_cuts_after_max_products():
    """max_products=2: a chain of 5 products becomes 3 kernels, values handed on through
    @main (printed IR), and the program's value is unchanged (run on the CPU target)."""
    funcs = fuse_elementwise.run(canonicalize.run(field_io.read(field_stage(_chain, 2))), max_products=2)
    text = str(parsed(field_io.write(funcs))[0])
    assert [fn.name for fn in funcs] == ["kernel_0", "kernel_1", "kernel_2", "main"]
    assert text.count("call @kernel_") == 3
    counts = [sum(n.op in fuse_elementwise.PRODUCTS for n in fn.nodes) for fn in funcs[:3]]
    assert counts == [2, 2, 1]
    (got,) = run(_chain, [XS, YS], max_products=2)
    assert got == [_chain_value(x, y) for x, y in zip(XS, YS)]


def test_fuse_elementwise_cuts_before_max_inputs():
    """max_inputs=2: no kernel reads more than 2 values from outside it (inputs of the
    program or of earlier kernels), and the values are unchanged."""
    def f(a, b, c, d):
        return (a - b) + (c - d), a * d
    funcs = fuse_elementwise.run(canonicalize.run(field_io.read(field_stage(f, 4))), max_inputs=2)
    kernels = [fn for fn in funcs if fn.name != "main"]
    assert len(kernels) >= 3 and all(fn.n_args <= 2 for fn in kernels)
    whole = fuse_elementwise.run(canonicalize.run(field_io.read(field_stage(f, 4))))
    assert [fn.n_args for fn in whole if fn.name != "main"] == [4]
    s, m = run(f, [XS, YS, YS, XS], max_inputs=2)
    assert s == [(x - y + y - x) % P for x, y in zip(XS, YS)] and m == [x * x % P for x in XS]
