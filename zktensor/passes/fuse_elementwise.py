"""fuse-elementwise: group elementwise `field` ops into kernels.

Input: `@main`, a straight-line `field` function as traced. Output: one
`@kernel_N` function per fused group (attribute `zktensor.kind =
"elementwise"`), each launched once over the batch, and a `@main` that calls
them in order. Every op of the `field` dialect is elementwise, so a traced
program becomes a single kernel: its intermediates live in registers and only
the program's inputs and outputs touch memory. Ops outside `ELEMENTWISE` would
close the current group and start a new one.

`max_products=k` also closes a group before its (k+1)-th product (mul, square,
pow), and `max_inputs=k` before a node that would make it read more than k
values from outside: a kernel too big for a GPU's registers becomes a chain of
kernels, the values live across a cut passed through memory by @main (the
Triton target's point kernels of BLS12-381 G2 and MNT4-753 G1,
the `triton_cuts` of their records in `algebra.curves`).

    func.func @main(%0, %1, %2) {            func.func @kernel_0(%0, %1, %2) attributes {zktensor.kind = "elementwise"} {
      %3 = field.mul %0, %1                    %3 = field.mul %0, %1
      %4 = field.mul %2, %2          ->        %4 = field.mul %2, %2
      %5 = field.sub %3, %4                    %5 = field.sub %3, %4 ...
    }                                        func.func @main(...) { %3_0 = func.call @kernel_0(%0, %1, %2) ... }
"""
from __future__ import annotations

from ..ir.program import Node
from .field_io import FieldFunc

ELEMENTWISE = {"add", "sub", "mul", "neg", "square", "pow", "constant", "to_mont", "from_mont"}
PRODUCTS = {"mul", "square", "pow"}


def run(funcs: list[FieldFunc], max_products: int | None = None,
        max_inputs: int | None = None) -> list[FieldFunc]:
    (main,) = [f for f in funcs if f.name == "main"]
    groups: list[list[int]] = [[]]
    products, inside, outside = 0, set(), set()
    for i, n in enumerate(main.nodes):
        new_inputs = {a for a in n.args if a not in inside} - outside
        cut = (max_products is not None and n.op in PRODUCTS and products == max_products) or \
            (max_inputs is not None and len(outside) + len(new_inputs) > max_inputs)
        if (n.op not in ELEMENTWISE or cut) and groups[-1]:
            groups.append([])
            products, inside, outside = 0, set(), set()
            new_inputs = set(n.args)
        groups[-1].append(i)
        products += n.op in PRODUCTS
        inside.add(main.n_args + i)
        outside |= new_inputs
    kernels, calls = [], []
    value_of: dict[int, object] = {i: i for i in range(main.n_args)}
    for k, group in enumerate(groups):
        members = {main.n_args + i for i in group}
        used_later = set(main.outputs)
        for j, n in enumerate(main.nodes):
            if main.n_args + j not in members:
                used_later.update(n.args)
        ins = {a for i in group for a in main.nodes[i].args if a not in members}
        outs = sorted(v for v in members if v in used_later)
        if k == len(groups) - 1:  # outputs that are inputs pass through the last kernel
            passed = [o for o in main.outputs if o < main.n_args]
            ins |= set(passed)
            outs += sorted(set(passed))
        ins = sorted(ins)
        local = {v: i for i, v in enumerate(ins)}
        nodes = []
        for i in group:
            n = main.nodes[i]
            local[main.n_args + i] = len(ins) + len(nodes)
            nodes.append(Node(n.op, tuple(local[a] for a in n.args), n.attr))
        name = f"kernel_{k}"
        kernels.append(FieldFunc(name, main.field, len(ins), nodes, tuple(local[o] for o in outs),
                                 {"zktensor.kind": '"elementwise"'}))
        call_id = main.n_args + len(calls)
        calls.append(Node("call", tuple(value_of[a] for a in ins), (name, len(outs))))
        for r, o in enumerate(outs):
            value_of[o] = (call_id, r)
    new_main = FieldFunc("main", main.field, main.n_args, calls, tuple(value_of[o] for o in main.outputs))
    return kernels + [new_main]
