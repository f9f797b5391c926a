"""How deep JSON text nests, found before parsing it.

Python's JSON parser (the C one, and the package's) recurses once a level, bounded only by
the interpreter's recursion limit, which libraries raise (py_ecc sets 100,000 at import):
that deep a recursion ends the process instead of raising RecursionError. So every reader
of untrusted JSON (the file readers, `groth16.formats.json_io`; the service's messages,
`serve.wire`) refuses text nested past its bound before parsing it.

No recursion and no `re` (the service's thin client imports this): escape pairs dropped
(``\\\\`` first, then ``\\"``, as JSON's lexer reads them), the text between quotes dropped,
then one step a bracket.
"""
from __future__ import annotations

_BRACKETS_ONLY = {c: None for c in range(128) if chr(c) not in "[]{}"}


def nesting_depth(text: str) -> int:
    """How deep arrays and objects nest in JSON text, strings ignored. Where the text is not
    JSON the figure may be wrong past the first error, which the parser stops at."""
    outside = "".join(text.replace("\\\\", "").replace('\\"', "").split('"')[0::2])
    depth = deepest = 0
    for c in outside.translate(_BRACKETS_ONLY):
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
    return deepest
