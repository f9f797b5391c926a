"""The package's imports form layers: a module imports only from its own layer and the
layers below it. The import graph is read from the source (ast over every module, imports
inside functions included), so an import hidden in a function to dodge a circle fails too.

LAYERS is the one written list of the layers, bottom first; ARCHITECTURE.md copies it.
"""
from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "zktensor"

# bottom first: (layer, module patterns); "x.*" is every module under package x (x itself too)
LAYERS = [
    ("config", ["zktensor.config", "zktensor.version"]),
    ("runtime", ["zktensor.runtime.*"]),
    ("tune lookup", ["zktensor.tune.cache", "zktensor.tune.costmodel", "zktensor.tune.resolve"]),
    ("algebra", ["zktensor.algebra.*"]),
    ("ir", ["zktensor.ir.*"]),
    ("passes", ["zktensor.passes.*"]),
    ("kernels", ["zktensor.kernels.*"]),
    ("values", ["zktensor.tensor", "zktensor.points"]),
    ("ops", ["zktensor.ops.*", "zktensor.jit"]),
    ("groth16", ["zktensor.groth16.*"]),
    ("applications", ["zktensor.zkml.*", "zktensor.serve.*"]),
    ("tune search", ["zktensor.tune", "zktensor.tune.search", "zktensor.tune.tuner", "zktensor.tune.workloads",
                     "zktensor.tune.space", "zktensor.tune.progress"]),
    # the commands: `zktensor <cmd>` and the modules that register or run one through the public API
    ("entry points", ["zktensor", "zktensor.cli", "zktensor.prebuild", "zktensor.tune.cli", "zktensor.zkml.cli",
                      "zktensor.groth16.warmup"]),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def layer_of(mod: str) -> int:
    """The layer of a module; the most specific pattern wins (zktensor.tune.cache over
    zktensor.tune.*). Fails for a module no layer names."""
    best = None
    for i, (_, patterns) in enumerate(LAYERS):
        for pat in patterns:
            if pat.endswith(".*"):
                base = pat[:-2]
                if mod == base or mod.startswith(base + "."):
                    score = len(base)
                else:
                    continue
            elif mod == pat:
                score = len(pat) + 1000     # an exact name over any package pattern
            else:
                continue
            if best is None or score > best[0]:
                best = (score, i)
    if best is None:
        raise AssertionError(f"{mod} is in no layer of tests/test_layers.py LAYERS: add it")
    return best[1]


def imports(mod: str, path: Path, known: dict) -> list[tuple[str, int]]:
    """(imported zktensor module, line) for every import statement in the module, at any depth,
    and every importlib.import_module call with a constant name."""
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            subs = [f"{name}.{a.name}" for a in node.names if f"{name}.{a.name}" in known]
            targets = subs or [name]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            name = node.args[0].value
            if name.startswith(".") and len(node.args) > 1:
                dots = len(name) - len(name.lstrip("."))
                base = package.split(".")
                name = ".".join(base[:len(base) - dots + 1] + [name.lstrip(".")])
            targets = [name]
        for t in targets:
            if t == "zktensor" or t.startswith("zktensor."):
                while t not in known and "." in t:      # `from zktensor.x import name`: module x
                    t = t.rpartition(".")[0]
                out.append((t, node.lineno))
    return out


def test_every_module_has_a_layer():
    for mod in modules():
        layer_of(mod)


def test_every_named_module_exists():
    """The table names no module that is gone (a pattern x.* names a package that exists)."""
    known = modules()
    for _, patterns in LAYERS:
        for pat in patterns:
            assert (pat[:-2] if pat.endswith(".*") else pat) in known, pat


def test_imports_point_down_the_layers():
    known = modules()
    up = []
    for mod, path in known.items():
        me = layer_of(mod)
        for target, line in imports(mod, path, known):
            # a package's __init__ runs before its modules: importing zktensor.x.y imports
            # zktensor.x, which is checked as a module of its own where it names one
            if layer_of(target) > me:
                up.append(f"{path.relative_to(PKG.parent)}:{line}: {mod} ({LAYERS[me][0]}) imports "
                          f"{target} ({LAYERS[layer_of(target)][0]})")
    assert not up, "imports that point up the layers:\n" + "\n".join(up)


def test_the_walker_sees_function_level_imports(tmp_path):
    """The check reads imports inside functions and relative imports, so it can fail."""
    pkg = tmp_path / "zktensor" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("def f():\n    from ..cli import main\n    from . import b\n")
    known = {"zktensor.cli": None, "zktensor.sub.a": None, "zktensor.sub.b": None, "zktensor.sub": None}
    got = imports("zktensor.sub.a", pkg / "a.py", known)
    assert ("zktensor.cli", 2) in got and ("zktensor.sub.b", 3) in got
    assert layer_of("zktensor.cli") > layer_of("zktensor.kernels.elementwise")
