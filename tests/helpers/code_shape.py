"""Readers of the code's shape for tests/test_import_graph.py: classes with more than one base, state names written as
text, long modules and long functions. Each returns its offenders as `file:line ...` lines, so a failing test says
where to look; each is tested on a small source sample that must fail it, so a reader that sees nothing cannot pass
silently.
"""
from __future__ import annotations

import ast
import enum
import importlib
import inspect
import re
from pathlib import Path

import panel as pn
import param

# -- classes with more than one base ----------------------------------------------------------------------------------


def _allowed_base(base: type) -> bool:
    """A base a class may have beside its one other base: a Viewer or Parameterized class (param's own composition),
    an exception or an enum (`class Code(str, Enum)`)."""
    return issubclass(base, (pn.viewable.Viewer, param.Parameterized, BaseException, enum.Enum))


def base_offence(bases: tuple[type, ...]) -> str | None:
    """Why a class of these bases is assembled from more than one base besides the allowed kinds (its bases named),
    or None."""
    others = [base for base in bases if not _allowed_base(base)]
    if len(bases) > 1 and len(others) > 1:
        return "bases " + ", ".join(f"{b.__module__}.{b.__qualname__}" for b in bases)
    return None


def _own_classes(module) -> list[type]:
    """The classes `module` defines (not those it imports), nested classes included."""
    found, todo = [], [obj for obj in vars(module).values() if inspect.isclass(obj)]
    while todo:
        cls = todo.pop()
        if cls.__module__ != module.__name__ or cls in found:
            continue
        found.append(cls)
        todo += [obj for obj in vars(cls).values() if inspect.isclass(obj)]
    return found


def _many_bases(node: ast.ClassDef) -> bool:
    """The statement names more than one base, or bases unpacked from a sequence (`class X(*BASES)`)."""
    return len(node.bases) > 1 or any(isinstance(base, ast.Starred) for base in node.bases)


def _local_class_defs(tree: ast.AST):
    """Class statements inside a function (not reachable from the imported module), with more than one base."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ClassDef) and _many_bases(inner):
                    yield inner


def multi_base_classes(modules: dict[str, Path], root: Path, skip: tuple[str, ...] = ()) -> list[str]:
    """`file:line Class: bases ...` for each class of the modules (imported, so an alias or a re-export cannot hide a
    base) assembled from more than one base besides Viewer/Parameterized classes, exceptions and enums. A class
    defined inside a function has its bases looked up in its module's names; one that cannot be looked up, or a
    module in `skip` (one that does something on import), is read by its statement and counted by its bases."""
    found = []
    for name, file in modules.items():
        tree, path = ast.parse(file.read_text(encoding="utf-8")), file.relative_to(root)
        if name in skip:
            found += [f"{path}:{c.lineno} {c.name}: bases {', '.join(map(ast.unparse, c.bases))} (module not imported)"
                      for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and _many_bases(c)]
            continue
        module = importlib.import_module(name)
        for cls in _own_classes(module):
            why = base_offence(cls.__bases__)
            if why:
                line = inspect.getsourcelines(cls)[1] if inspect.getsourcefile(cls) else 0
                found.append(f"{path}:{line} {cls.__qualname__}: {why}")
        for node in _local_class_defs(tree):
            try:
                bases = eval(f"({', '.join(map(ast.unparse, node.bases))},)", vars(module))  # noqa: S307 — our source
                why = base_offence(bases) if all(map(inspect.isclass, bases)) else "bases " + ", ".join(
                    map(ast.unparse, node.bases))
            except Exception:  # a base named only inside the function: counted by the statement
                why = "bases " + ", ".join(map(ast.unparse, node.bases))
            if why:
                found.append(f"{path}:{node.lineno} {node.name} (inside a function): {why}")
    return found


# -- state names written as text --------------------------------------------------------------------------------------
SQL = re.compile(r"\b(SELECT|UPDATE|INSERT|DELETE|WHERE|SET|VALUES)\b")
STATE_KEYS = {"status", "state"}


def _target_names(node: ast.AST) -> set[str]:
    """The last name of each assignment target (`self.state = ...` → state)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = set()
    for target in targets:
        for part in ast.walk(target):
            if isinstance(part, ast.Name):
                names.add(part.id)
            elif isinstance(part, ast.Attribute):
                names.add(part.attr)
    return names


def _state_key(name: str) -> bool:
    return name in STATE_KEYS or name.endswith(("_status", "_state"))


def _constants(node: ast.AST, values: set[str]) -> list[str]:
    """The state names among the string constants directly in `node` (a constant, or a tuple/list/set of them)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [item.value for item in items if isinstance(item, ast.Constant) and item.value in values]


def state_literals(source: str, values: set[str]) -> list[tuple[int, str]]:
    """(line, what) for each state name written as text in `source`: compared (`==`, `!=`, `in` a tuple/set/list),
    passed as `status=`/`state=`, assigned to a status/state, a default of such a parameter, a key of a dict literal
    of states, a hand-kept tuple/list/set of states, quoted inside SQL text or bound to it as a parameter. Prose
    (messages, docstrings) is not read."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                found += [(node.lineno, f"compared with {v!r}") for v in _constants(side, values)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("execute", "executemany") and len(node.args) > 1:
            found += [(node.lineno, f"{v!r} bound in SQL") for v in _constants(node.args[1], values)]
        elif isinstance(node, ast.keyword) and node.arg and _state_key(node.arg):
            found += [(node.value.lineno, f"{node.arg}={v!r}") for v in _constants(node.value, values)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and \
                any(map(_state_key, _target_names(node))):
            found += [(node.lineno, f"assigned {v!r}") for v in _constants(node.value, values)]
        elif isinstance(node, ast.arguments):
            positional = [*node.posonlyargs, *node.args]
            pairs = [*zip(positional[len(positional) - len(node.defaults):], node.defaults),
                     *zip(node.kwonlyargs, node.kw_defaults)]
            for arg, default in pairs:
                if default is not None and _state_key(arg.arg):
                    found += [(default.lineno, f"{arg.arg}={v!r} (a default)") for v in _constants(default, values)]
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if len(keys) > 1 and all(k in values for k in keys):
                found.append((node.lineno, f"a dict keyed by states {keys}"))
            for key, value in zip(node.keys, node.values):
                if isinstance(key, ast.Constant) and isinstance(key.value, str) and _state_key(key.value):
                    found += [(value.lineno, f"{key.value!r}: {v!r}") for v in _constants(value, values)]
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            texts = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            if len(texts) > 1 and len(texts) == len(node.elts) and all(t in values for t in texts):
                found.append((node.lineno, f"a hand-kept list of states {texts}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
            found += [(node.lineno, f"{m.group(0)} in SQL") for m in re.finditer(r"'([^']*)'", node.value)
                      if m.group(1) in values]
    return sorted(set(found))


def status_literals(paths: list[Path], values: set[str], root: Path) -> list[str]:
    """`file:line what` for each state name written as text in the files (see `state_literals`)."""
    return [f"{path.relative_to(root)}:{line} {what}" for path in paths
            for line, what in state_literals(path.read_text(encoding="utf-8"), values)]


# -- long modules and functions ---------------------------------------------------------------------------------------


def long_modules(paths: list[Path], limit: int, root: Path) -> list[str]:
    """`file:1 N lines` for each file over `limit` lines."""
    return [f"{path.relative_to(root)}:1 {n} lines" for path in paths
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit]


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring (or the first statement) to the function's end."""
    body = node.body
    has_docstring = (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                     and isinstance(body[0].value.value, str))
    start = body[1] if has_docstring and len(body) > 1 else body[0]
    return node.end_lineno - start.lineno + 1


def long_functions(paths: list[Path], limit: int, root: Path) -> list[str]:
    """`file:line name: N lines` for each function whose body below its docstring is over `limit` lines."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(root)}:{node.lineno} {node.name}: {n} lines" for node in ast.walk(tree)
                  if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (n := body_lines(node)) > limit]
    return found
