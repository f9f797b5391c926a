"""IRDL text from op tables: the dialects are declared once, as data next to the tracers
that emit their ops (`program.FIELD_SIGNATURES`, `ec.EC_SIGNATURES`), and printed here.

An op's signature is (operands, results, attributes), each a tuple of "name:var"; a var
names a type constraint of the dialect (`bases`), and an operand or result written
"name:*var" is variadic. The same var in two places is the same type (ec.neg returns its
operand's point type); distinct vars over one base may differ. Vars are declared in the
order operands, results, attributes first mention them.
"""
from __future__ import annotations


def _split(entry: str) -> tuple[str, str, bool]:
    name, var = entry.split(":")
    return name, var.lstrip("*"), var.startswith("*")


def operation(name: str, signature, bases: dict) -> list[str]:
    operands, results, attrs = signature
    order = []
    for entry in operands + results + attrs:
        var = _split(entry)[1]
        if var not in order:
            order.append(var)
    lines = [f"  irdl.operation @{name} {{"]
    lines += [f"    %{v} = irdl.base {bases[v]}" for v in order]
    if attrs:
        lines.append("    irdl.attributes {" + ", ".join(f'"{n}" = %{v}' for n, v, _ in map(_split, attrs)) + "}")
    for kw, group in (("operands", operands), ("results", results)):
        if group:
            parts = [f"{n}: {'variadic ' if star else ''}%{v}" for n, v, star in map(_split, group)]
            lines.append(f"    irdl.{kw}({', '.join(parts)})")
    lines.append("  }")
    return lines


def dialect(name: str, types: dict, ops: dict, bases: dict) -> str:
    """The IRDL module text of dialect `name`: types {type: ((param, var, constraint), ...)},
    ops {op: signature}, bases {var: constraint} of the ops."""
    lines = [f"irdl.dialect @{name} {{"]
    for tname, params in types.items():
        lines.append(f"  irdl.type @{tname} {{")
        lines += [f"    %{v} = irdl.base {base}" for _, v, base in params]
        lines.append(f"    irdl.parameters({', '.join(f'{p}: %{v}' for p, v, _ in params)})")
        lines.append("  }")
    for op, sig in ops.items():
        lines += operation(op, sig, bases)
    lines.append("}")
    return "\n" + "\n".join(lines) + "\n"


def arity(signature) -> int | None:
    """Value operands of an op (None: variadic)."""
    operands = signature[0]
    return None if any(_split(e)[2] for e in operands) else len(operands)
