"""canonicalize: algebraic simplification of `field` programs.

Input and output: `field`-dialect functions. Rewrites are a table of
(op, condition, replacement) rules applied to a fixed point, followed by
common-subexpression and dead-code elimination.

    %2 = field.mul %0, %0          %2 = field.square %0
    %3 = field.constant {"1"}  ->  (%4 is %2: x·1 = x)
    %4 = field.mul %2, %3
"""
from __future__ import annotations

from ..algebra import field as field_record
from ..ir.program import Node
from .field_io import FieldFunc

ARITY2 = {"add", "sub", "mul"}


def _const(f, consts, v):
    return consts.get(v)


# Each rule: (op, condition(node, consts), replacement(node, consts, p)).
# A replacement is a Node, or an int meaning "this value is operand/value #i".
RULES = [
    # x·x = x²: one squaring instead of a general product
    ("mul", lambda n, c, p: n.args[0] == n.args[1], lambda n, c, p: Node("square", (n.args[0],))),
    # x + 0 = x, 0 + x = x, x − 0 = x
    ("add", lambda n, c, p: c.get(n.args[1]) == 0, lambda n, c, p: n.args[0]),
    ("add", lambda n, c, p: c.get(n.args[0]) == 0, lambda n, c, p: n.args[1]),
    ("sub", lambda n, c, p: c.get(n.args[1]) == 0, lambda n, c, p: n.args[0]),
    # 0 − x = −x
    ("sub", lambda n, c, p: c.get(n.args[0]) == 0, lambda n, c, p: Node("neg", (n.args[1],))),
    # x·(−1) = −x, (−1)·x = −x: a negation instead of a product
    ("mul", lambda n, c, p: c.get(n.args[1]) == p - 1, lambda n, c, p: Node("neg", (n.args[0],))),
    ("mul", lambda n, c, p: c.get(n.args[0]) == p - 1, lambda n, c, p: Node("neg", (n.args[1],))),
    # x·1 = x, 1·x = x
    ("mul", lambda n, c, p: c.get(n.args[1]) == 1, lambda n, c, p: n.args[0]),
    ("mul", lambda n, c, p: c.get(n.args[0]) == 1, lambda n, c, p: n.args[1]),
    # x^1 = x, x^2 = x²
    ("pow", lambda n, c, p: n.attr == 1, lambda n, c, p: n.args[0]),
    ("pow", lambda n, c, p: n.attr == 2, lambda n, c, p: Node("square", (n.args[0],))),
    # x^0 = 1
    ("pow", lambda n, c, p: n.attr == 0, lambda n, c, p: Node("constant", (), 1)),
]

# constant folding: an op whose operands are all constants is computed here
FOLD = {
    "add": lambda p, a, b: (a + b) % p,
    "sub": lambda p, a, b: (a - b) % p,
    "mul": lambda p, a, b: a * b % p,
    "neg": lambda p, a: -a % p,
    "square": lambda p, a: a * a % p,
}


def run_func(f: FieldFunc) -> FieldFunc:
    p = field_record(f.field).p
    remap: dict[int, int] = {i: i for i in range(f.n_args)}
    nodes: list[Node] = []
    consts: dict[int, int] = {}
    seen: dict[Node, int] = {}

    def emit(node: Node) -> int:
        if node in seen:                         # CSE
            return seen[node]
        if node.op in FOLD and node.args and all(a in consts for a in node.args):
            node = Node("constant", (), FOLD[node.op](p, *(consts[a] for a in node.args)))
            if node in seen:
                return seen[node]
        vid = f.n_args + len(nodes)
        nodes.append(node)
        seen[node] = vid
        if node.op == "constant":
            consts[vid] = node.attr
        return vid

    for i, n in enumerate(f.nodes):
        node = Node(n.op, tuple(remap[a] for a in n.args), n.attr)
        while True:
            for op, cond, repl in RULES:
                if node.op == op and cond(node, consts, p):
                    r = repl(node, consts, p)
                    if isinstance(r, int):
                        node = r
                    else:
                        node = r
                    break
            else:
                break
            if isinstance(node, int):
                break
        remap[f.n_args + i] = node if isinstance(node, int) else emit(node)
    outputs = tuple(remap[o] for o in f.outputs)
    return _dce(FieldFunc(f.name, f.field, f.n_args, nodes, outputs, dict(f.attrs)))


def _dce(f: FieldFunc) -> FieldFunc:
    live = set(f.outputs)
    for i in range(len(f.nodes) - 1, -1, -1):
        if f.n_args + i in live:
            live.update(f.nodes[i].args)
    new_id, nodes = {i: i for i in range(f.n_args)}, []
    for i, n in enumerate(f.nodes):
        if f.n_args + i in live:
            new_id[f.n_args + i] = f.n_args + len(nodes)
            nodes.append(Node(n.op, tuple(new_id[a] for a in n.args), n.attr))
    return FieldFunc(f.name, f.field, f.n_args, nodes, tuple(new_id[o] for o in f.outputs), dict(f.attrs))


def run(funcs: list[FieldFunc]) -> list[FieldFunc]:
    return [run_func(f) for f in funcs]
