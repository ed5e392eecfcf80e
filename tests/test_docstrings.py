"""Every public name of the engine and the dashboard says what it is.

Public: a module, class, function or method whose name has no leading underscore, in a module (and package) whose
name has none either; a method counts when it is defined in our code, so `forward` of an `nn.Module` subclass counts
and an inherited one does not. A property's setter shares its getter's docstring and is not counted again. The
names are read from the source with `ast` (nothing is imported), so the count is the same with or without the
dashboard's libraries installed. The API reference of the documentation is built from these docstrings.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PACKAGES = ("engine", "dashboard")  # the dashboard's public objects (Explorer, ComparePage, serving) and the rest


def public_files() -> list[Path]:
    """The public modules of the engine and the dashboard."""
    return [p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
            if not any(part.startswith("_") and part not in ("__init__.py", "__main__.py")
                       for part in p.relative_to(ROOT).parts)]


def _is_setter(node: ast.AST) -> bool:
    return any(ast.unparse(d).endswith((".setter", ".deleter")) or ast.unparse(d) in ("overload", "typing.overload")
               for d in getattr(node, "decorator_list", []))


def undocumented(path: Path, root: Path = ROOT) -> list[str]:
    """`path:line name` for each public module, class, function and method in `path` without a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(root).as_posix()
    missing = [] if ast.get_docstring(tree) else [f"{rel}:1 (module docstring)"]

    def walk(body, prefix):
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if node.name.startswith("_") or _is_setter(node):
                continue
            if ast.get_docstring(node) is None:
                missing.append(f"{rel}:{node.lineno} {prefix}{node.name}")
            if isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(tree.body, "")
    return missing


def test_the_scan_sees_the_engine_and_the_dashboard_objects():
    files = {p.relative_to(ROOT).as_posix() for p in public_files()}
    assert {"engine/train/trainer.py", "engine/models/svgp.py", "dashboard/explorer/explorer.py",
            "dashboard/compare/page.py", "dashboard/serving/process.py"} <= files
    assert not any("/_" in f.replace("/__init__", "").replace("/__main__", "") for f in files)


def test_an_undocumented_name_is_reported(tmp_path):
    module = tmp_path / "thing.py"
    module.write_text('"""A module."""\n\n\nclass Thing:\n    """A thing."""\n\n'
                      '    def forward(self, x):\n        return x\n\n    def _private(self):\n        return 1\n\n\n'
                      'def helper():\n    return 2\n')
    assert undocumented(module, tmp_path) == ["thing.py:7 Thing.forward", "thing.py:14 helper"]
    module.write_text("x = 1\n")
    assert undocumented(module, tmp_path) == ["thing.py:1 (module docstring)"]


def test_every_public_name_has_a_docstring():
    missing = [line for path in public_files() for line in undocumented(path)]
    assert not missing, f"{len(missing)} public names have no docstring:\n" + "\n".join(missing)
