"""Reading and writing `field`-dialect functions.

Passes over the `field` dialect read a module through the MLIR bindings into
`FieldFunc` records (a straight-line list of `Node`s over numbered values),
rewrite them, and print them back as IR that is parsed and verified again.
"""
from __future__ import annotations

from dataclasses import dataclass, field as dc_field

from ..ir.program import Node, Program


@dataclass
class FieldFunc:
    name: str
    field: str
    n_args: int
    nodes: list[Node]
    outputs: tuple[int, ...]
    attrs: dict[str, str] = dc_field(default_factory=dict)

    @classmethod
    def from_program(cls, prog: Program, name: str = "main") -> "FieldFunc":
        return cls(name, prog.field.name, prog.n_inputs, list(prog.nodes), prog.outputs)


def elem_type(field: str) -> str:
    return f'!field.elem<"{field}">'


def write(funcs: list[FieldFunc]) -> str:
    out = ["module {"]
    for f in funcs:
        t = elem_type(f.field)
        args = ", ".join(f"%{i}: {t}" for i in range(f.n_args))
        res = ", ".join([t] * len(f.outputs))
        attrs = ""
        if f.attrs:
            attrs = " attributes {" + ", ".join(f"{k} = {v}" for k, v in f.attrs.items()) + "}"
        out.append(f"  func.func @{f.name}({args}) -> ({res}){attrs} {{")
        for i, n in enumerate(f.nodes):
            vid = f.n_args + i
            ops = ", ".join(_ref(f, a) for a in n.args)
            tin = ", ".join([t] * len(n.args))
            if n.op == "call":
                callee, n_res = n.attr
                names = ", ".join(f"%r{vid}_{k}" for k in range(n_res))
                out.append(f'    {names} = func.call @{callee}({ops}) : ({tin}) -> ({", ".join([t] * n_res)})')
                continue
            attr = ""
            if n.op == "constant":
                attr = f' {{value = "{n.attr}"}}'
            elif n.op == "pow":
                attr = f' {{exponent = "{n.attr}"}}'
            out.append(f'    %{vid} = "field.{n.op}"({ops}){attr} : ({tin}) -> {t}')
        outs = ", ".join(_ref(f, o) for o in f.outputs)
        out.append(f"    func.return {outs} : {res}" if f.outputs else "    func.return")
        out.append("  }")
    out.append("}")
    return "\n".join(out)


def _ref(f: FieldFunc, vid) -> str:
    return f"%{vid}" if isinstance(vid, int) else f"%r{vid[0]}_{vid[1]}"


def read(module) -> list[FieldFunc]:
    """FieldFuncs of a module parsed with the bindings (field ops and calls only)."""
    funcs = []
    for fop in module.body.operations:
        op = fop.operation
        name = str(op.attributes["sym_name"]).strip('"')
        block = op.regions[0].blocks[0]
        ids = {a: i for i, a in enumerate(block.arguments)}
        field_name = None
        for a in block.arguments:
            field_name = str(a.type).split('"')[1]
        nodes, outputs = [], ()
        attrs = {k: str(op.attributes[k]) for k in op.attributes
                 if k not in ("sym_name", "function_type", "sym_visibility")}
        for inner in block.operations:
            o = inner.operation
            args = tuple(ids[v] for v in o.operands)
            if o.name == "func.return":
                outputs = args
                continue
            vid = len(block.arguments) + len(nodes)
            if o.name == "func.call":
                callee = str(o.attributes["callee"]).lstrip("@")
                nodes.append(Node("call", args, (callee, len(o.results))))
                for k, r in enumerate(o.results):
                    ids[r] = (vid, k)
                continue
            kind = o.name.split(".", 1)[1]
            attr = None
            if kind == "constant":
                attr = int(str(o.attributes["value"]).strip('"'))
            elif kind == "pow":
                attr = int(str(o.attributes["exponent"]).strip('"'))
            nodes.append(Node(kind, args, attr))
            ids[o.results[0]] = vid
            if field_name is None:
                field_name = str(o.results[0].type).split('"')[1]
        funcs.append(FieldFunc(name, field_name, len(block.arguments), nodes, outputs, attrs))
    return funcs
