"""Every file and module the repository cites exists, and nothing points outside it.

Docstrings, comments and docs name source files (`zktensor/runtime/aot.py`,
`scripts/fixtures.sh`) and modules (`zktensor.ops.msm`); a rename that forgets
them leaves readers at a dead end. Paths of outputs (`bench/results/gpu/`, a
build directory) are not citations and are not checked: only paths ending in a
source suffix are. A Markdown file named without a directory (`ARCHITECTURE.md`) is one of
the top-level documents, or one beside the citing file, or a file that a tool of ours
writes (`WRITTEN`). `.ci/run` alone may name the world outside the checkout.
"""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKIP_DIRS = {".git", ".venv", "node_modules", "build", "__pycache__", "fixtures", "target", "results"}
TEXT_SUFFIXES = {".py", ".md", ".sh", ".toml", ".rs", ".go", ".txt", ".ini"}
SOURCE_SUFFIXES = (".py", ".sh", ".md", ".circom", ".toml", ".rs", ".go")
#: `zktensor.<name>` attributes of our MLIR dialects' operations, not modules
IR_ATTRIBUTES = {"field", "kind", "limbs", "inputs", "outputs", "lanes", "strategy", "round_down"}

PATH_RE = re.compile(r"(?<![\w./-])((?:zktensor|bench|scripts|tests|examples)/[\w./-]*\w)")
BARE_MD_RE = re.compile(r"(?<![\w./-])([\w-]+\.md)\b")
#: Markdown files that a tool writes, cited by name alone: where the repository keeps them
WRITTEN = {"REPORT.md": "bench/results/REPORT.md"}      # python -m bench.report
MODULE_RE = re.compile(r"(?<![\w./])(zktensor(?:\.\w+)+)")


def repository_text_files():
    """The repository's text files (git's view: tracked, or new and not ignored), this
    module excepted: its own examples are meant to be dead."""
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split("\n")
        files = [Path(f) for f in out if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        files = [p.relative_to(ROOT) for p in ROOT.rglob("*")
                 if not SKIP_DIRS.intersection(p.relative_to(ROOT).parts[:-1])]
    for rel in sorted(set(files)):
        if rel.suffix in TEXT_SUFFIXES and rel != Path(__file__).relative_to(ROOT) and (ROOT / rel).is_file() \
                and not SKIP_DIRS.intersection(rel.parts[:-1]):
            yield rel


def is_module(dotted: str) -> bool:
    """`zktensor.a.b.c` names a module, or a name that the longest module prefix of it
    mentions (an attribute), or a package that setup.py maps elsewhere."""
    parts = dotted.split(".")
    if parts[1] in IR_ATTRIBUTES:
        return True
    for i in range(len(parts), 1, -1):
        base = ROOT.joinpath(*parts[:i])
        src = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if src.is_file():
            return i == len(parts) or re.search(rf"\b{parts[i]}\b", src.read_text()) is not None
    return dotted in re.findall(r'"(zktensor\.\w+)"', (ROOT / "setup.py").read_text())


def dead_references(rel: Path) -> list[str]:
    text = (ROOT / rel).read_text(errors="replace")
    out = []
    for m in PATH_RE.finditer(text):
        ref = m[1].rstrip(".")
        if ref.endswith(SOURCE_SUFFIXES) and not (ROOT / ref).exists():
            out.append(f"{rel}: cites {ref}, which does not exist")
    for m in BARE_MD_RE.finditer(text):
        name = m[1]
        if not any((ROOT / at).is_file() for at in (name, rel.parent / name, WRITTEN.get(name, name))):
            out.append(f"{rel}: cites {name}, which does not exist")
    # tests build module names of their own (an import-graph test's synthetic package):
    # a test that imports a missing module fails by itself
    for m in MODULE_RE.finditer(text) if rel.parts[0] != "tests" else ():
        if not is_module(m[1]):
            out.append(f"{rel}: cites module {m[1]}, which does not exist")
    return out


def test_cited_files_and_modules_exist():
    dead = [d for rel in repository_text_files() for d in dead_references(rel)]
    assert not dead, "\n".join(dead)


@pytest.mark.parametrize("pattern", [r"\.\./shared", r"/work/shared"])
def test_nothing_points_outside_the_repository(pattern):
    hits = [f"{rel}:{i + 1}" for rel in repository_text_files() if rel != Path(".ci/run")
            for i, line in enumerate((ROOT / rel).read_text(errors="replace").splitlines())
            if re.search(pattern, line)]
    assert not hits, f"lines that point outside the repository ({pattern}): {hits}"


def test_the_checker_sees_a_dead_reference(tmp_path, monkeypatch):
    (tmp_path / "zktensor").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text("zktensor.c  zktensor/b.py\n")
    (tmp_path / "README.md").write_text("See [DESIGN.md](DESIGN.md), ARCHITECTURE.md and README.md.\n")
    (tmp_path / "ARCHITECTURE.md").write_text("")
    (tmp_path / "zktensor" / "__init__.py").write_text("")
    (tmp_path / "zktensor" / "a.py").write_text('"""See zktensor/b.py and zktensor.c; zktensor.a.f is fine."""\n')
    (tmp_path / "setup.py").write_text("")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert dead_references(Path("zktensor/a.py")) == [
        "zktensor/a.py: cites zktensor/b.py, which does not exist",
        "zktensor/a.py: cites module zktensor.c, which does not exist"]
    assert dead_references(Path("tests/t.py")) == ["tests/t.py: cites zktensor/b.py, which does not exist"]
    assert dead_references(Path("README.md")) == ["README.md: cites DESIGN.md, which does not exist"] * 2
