"""The engine's import structure: every module imports on its own, the module-level import graph has no cycle,
and the engine imports nothing of the dashboard or its UI libraries (it installs and runs without them).

The graph is read from the source with `ast`: an edge a → b for each import at module level (imports inside
functions and under `if TYPE_CHECKING:` run later, so they cannot form an import-time cycle), resolving relative
imports. `from pkg import name` is an edge to the submodule `pkg.name` when there is one, else to `pkg` itself,
and importing `a.b.c` also runs `a/__init__` and `a/b/__init__`, so those are edges too (except the packages that
enclose the importing module, which Python has imported before it).

The code's shape is read here too (tests/helpers/code_shape.py): no class assembled from more than one base besides
Viewer/Parameterized classes, exceptions and enums; no run, sweep, study, page or health state written as text outside
the enums of engine/train/states.py; no module over 350 lines and no function over 50. Each failure lists its
offenders as file:line, and each reader is first shown a small sample that must fail it.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import code_shape

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "invlab"  # the import name of the engine
FOLDER = "engine"  # its folder in the repository
DASHBOARD = "invlab.dashboard"  # the dashboard/ folder: the engine never imports it
UI_PACKAGES = (DASHBOARD, "panel", "holoviews", "bokeh")


def engine_modules(root: Path = ROOT, package: str = PACKAGE, folder: str = FOLDER) -> dict[str, tuple[Path, bool]]:
    """Dotted module name (as imported: `invlab.train.trainer`) → (file under `folder`, is a package)."""
    modules = {}
    for path in sorted((root / folder).rglob("*.py")):
        parts = [package, *path.relative_to(root / folder).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _imports(tree: ast.AST, in_function: bool = False):
    """(import node, inside a function) for every import statement, skipping `if TYPE_CHECKING:` blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, in_function
        yield from _imports(node, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))


def import_graph(root: Path = ROOT, package: str = PACKAGE, folder: str = FOLDER):
    """(module-level edges {module: {modules of the package}}, function-local edges [(module, target, line)],
    {external top-level package (or the dashboard, `invlab.dashboard`): {importing modules}}) over every module of
    the package."""
    modules = engine_modules(root, package, folder)
    graph, local, external = {}, [], {}
    for name, (path, is_package) in modules.items():
        here = name.split(".") if is_package else name.split(".")[:-1]  # the package `from .` refers to
        edges = set()
        for node, in_function in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                submodules = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
                targets = submodules + ([base] if len(submodules) < len(node.names) else [])
            for target in targets:
                outside = DASHBOARD if target == DASHBOARD or target.startswith(DASHBOARD + ".") else \
                    target.split(".")[0]
                if outside != package:
                    external.setdefault(outside, set()).add(name)
                    continue
                while target not in modules:  # `import invlab.kernels.RBF`-style names: the module holding them
                    target = target.rpartition(".")[0]
                if target == name:
                    continue
                if in_function:
                    local.append((name, target, node.lineno))
                    continue
                edges.add(target)
                parts = target.split(".")
                for i in range(1, len(parts)):
                    parent = ".".join(parts[:i])
                    if not (name + ".").startswith(parent + "."):
                        edges.add(parent)
        graph[name] = edges
    return graph, local, external


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_reader_finds_cycles_and_ignores_function_local_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import A\n")
    (pkg / "a.py").write_text("from .b import B\nA = 1\n")
    (pkg / "b.py").write_text("from . import a\nB = 2\n\ndef late():\n    from .sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from ..b import B\nimport panel\n")
    graph, local, external = import_graph(tmp_path, "pkg", "pkg")
    assert graph["pkg.b"] == {"pkg.a"}  # `from . import a` is the submodule, not the package
    assert graph["pkg.sub.c"] == {"pkg.b"}  # its enclosing packages are not edges
    assert local == [("pkg.b", "pkg.sub.c", 5)]
    assert external == {"panel": {"pkg.sub.c"}}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def with_local_imports(graph: dict[str, set[str]], local: list[tuple[str, str, int]]) -> dict[str, set[str]]:
    """The graph with an edge for every function-local import too."""
    out = {name: set(edges) for name, edges in graph.items()}
    for name, target, _ in local:
        out.setdefault(name, set()).add(target)
    return out


def test_engine_imports_have_no_cycle_module_level_or_function_local():
    """Not even through an import inside a function: such a circle runs at call time instead of import time, and
    ties the modules in it together as tightly (none can be read, moved or tested without the others)."""
    graph, local, _ = import_graph()
    found = cycles(graph)
    assert not found, "import cycles (module-level imports) between: " + "; ".join(" ↔ ".join(c) for c in found)
    found = cycles(with_local_imports(graph, local))
    lines = {(a, b): line for a, b, line in local}
    assert not found, "import cycles through function-local imports: " + "; ".join(
        " ↔ ".join(c) + " (" + ", ".join(f"{a}:{n} → {b}" for (a, b), n in lines.items() if a in c and b in c) + ")"
        for c in found)


def test_engine_imports_no_dashboard_and_no_ui_library():
    _, _, external = import_graph()
    offending = {pkg: sorted(external[pkg]) for pkg in UI_PACKAGES if pkg in external}
    assert not offending, f"the engine must run without the dashboard, but imports {offending}"


def test_engine_imports_optional_extras_only_where_they_are_used():
    """Dask (the `sweeps` extra), pyarrow (`data`) and JupyterLab (`lab`) are imported inside the functions that use
    them, so the core install (`pip install invariance-lab`) imports every engine module without them. GPyTorch (the
    `gpytorch` extra) is imported by `invlab.gpytorch` alone, the package that exists for its users."""
    optional = ("dask", "distributed", "pyarrow", "jupyterlab", "notebook", "pandas", "gpytorch", "linear_operator")
    offending: dict[str, list[str]] = {}
    for name, (path, _) in engine_modules().items():
        if name == "invlab.gpytorch" or name.startswith("invlab.gpytorch."):
            continue
        for node, in_function in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if in_function or (isinstance(node, ast.ImportFrom) and node.level):
                continue
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for top in {n.split(".")[0] for n in names} & set(optional):
                offending.setdefault(top, []).append(f"{name}:{node.lineno}")
    assert not offending, f"module-level imports of optional extras: {offending}; import them where they are used"


# -- each module imports on its own -----------------------------------------------------------------------------------
# One interpreter for all modules (a fresh one per module would take minutes): before each module, every engine module
# is dropped from sys.modules, so each is the first engine module imported. Torch and the other libraries stay loaded,
# which is what keeps this fast; they are not what is tested.
IMPORT_ALONE = """
import importlib, sys, traceback
failed = []
for name in sys.argv[1:]:
    for loaded in [m for m in sys.modules if m == "invlab" or m.startswith("invlab.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except Exception:
        failed.append(name + ":\\n" + traceback.format_exc(limit=-3))
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_engine_module_imports_alone():
    names = [name for name in engine_modules() if not name.endswith("__main__")]  # __main__ runs the CLI
    result = subprocess.run([sys.executable, "-c", IMPORT_ALONE, *names], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"modules that fail to import on their own:\n{result.stdout}{result.stderr}"



def test_dashboard_imports_have_no_cycle_module_level_or_function_local():
    """The same for the dashboard's modules and sub-packages: a sub-package's `__init__` runs before any of its
    modules, so a module of one sub-package that imports another sub-package, which imports back, is a circle too."""
    graph, local, _ = import_graph(package=DASHBOARD, folder="dashboard")
    assert len(graph) > 40 and "invlab.dashboard.explorer.explorer" in graph  # the reader sees the sub-packages
    for found in (cycles(graph), cycles(with_local_imports(graph, local))):
        assert not found, "dashboard import cycles between: " + "; ".join(" ↔ ".join(c) for c in found)


MAX_TOP_MODULES = 10  # modules directly in dashboard/; the rest live in sub-packages by page and by layer


def test_the_dashboard_is_grouped_by_page_and_layer_and_each_package_has_a_small_face():
    """At most ten modules directly in dashboard/; each sub-package's `__init__` says what it holds in a docstring
    and exports a small face (`__all__`, every name importable from it and defined in one of its own modules)."""
    import importlib

    top = sorted(p.name for p in (ROOT / "dashboard").glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top
    packages = sorted(p.parent.name for p in (ROOT / "dashboard").glob("*/__init__.py"))
    assert {"explorer", "session", "state", "controls", "views", "prior", "lessons", "serving", "notebook",
            "compare"} <= set(packages), packages
    for name in packages:
        package = importlib.import_module(f"{DASHBOARD}.{name}")
        assert (package.__doc__ or "").strip(), f"{name}/__init__.py has no docstring"
        face = getattr(package, "__all__", None)
        assert face and len(face) <= 12, f"{name}: __all__ should list a small face, got {face!r}"
        for public in face:
            obj = getattr(package, public)
            home = getattr(obj, "__module__", None) or package.__name__
            assert home.startswith(package.__name__), f"{name}.{public} is defined outside the package, in {home}"

# -- one import name --------------------------------------------------------------------------------------------------
OLD_NAMES = re.compile(r"^\s*(from|import)\s+(engine|dashboard)\b|[\"']-m[\"'],\s*[\"'](engine|dashboard)[\"']|"
                       r"-m (engine|dashboard)\b|monkeypatch\.setattr\([\"'](engine|dashboard)\.", re.M)


def test_nothing_imports_the_folders_by_their_own_names():
    """The repository's engine/ and dashboard/ folders are the package `invlab` and `invlab.dashboard`; code that
    imported them as `engine` or `dashboard` would load a second copy of every module beside the installed one (two
    `RunConfig` classes, two registries) whenever the checkout is on sys.path, and fail wherever it is not."""
    offending = []
    for folder in ("engine", "dashboard", "tests", "benchmarks", "docs", "notebooks"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".ipynb", ".md") or "_build" in path.parts or "_generated" in path.parts:
                continue
            for match in OLD_NAMES.finditer(path.read_text(encoding="utf-8")):
                offending.append(f"{path.relative_to(ROOT)}: {match.group(0).strip()}")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    offending += [f"README.md: {m.group(0).strip()}" for m in OLD_NAMES.finditer(readme)]
    assert not offending, offending


# -- the code's shape: parts not mixins, states by name, modules and functions of one job -----------------------------
MAX_LINES = 350  # one job a module: past this, it is split by job (never squeezed)
MAX_FUNCTION_LINES = 50  # a function's body below its docstring; past this, it is split into named steps
# modules that do something when imported (the served app; the login module `panel serve --basic-auth` loads)
ACTING_MODULES = ("invlab.dashboard.app", "invlab.dashboard.serving._login_module")


def shape_files() -> list[Path]:
    """Every module of the engine and the dashboard."""
    return [path for folder in ("engine", "dashboard") for path in sorted((ROOT / folder).rglob("*.py"))]


def state_names() -> set[str]:
    """The text of every run, sweep, study, page and health state (the enums of engine/train/states.py)."""
    from invlab.train import states

    kinds = (states.RunStatus, states.SweepStatus, states.StudyState, states.PageState, states.HealthState)
    return {member.value for kind in kinds for member in kind}


def _report(offenders: list[str], what: str) -> str:
    print("\n".join(offenders))  # shown with -s or -rA as well as in the failure
    return f"{len(offenders)} {what}:\n  " + "\n  ".join(offenders)


SAMPLE_CLASSES = """
import enum
import param

class Reads: pass
class Writes: pass
Store = Writes  # an alias: still a second base
BASES = (Reads, Writes)

class Mixed(Reads, Store): pass
class Starred(*BASES): pass
class Code(str, enum.Enum):
    A = "a"
class Refused(KeyError, ValueError): pass
class Config(param.Parameterized): pass
class Configured(Reads, Config): pass

def build():
    class Local(Reads, Store): pass
    return Local
"""


def test_the_base_reader_finds_mixins_through_aliases_and_spares_enums_exceptions_and_param(tmp_path, monkeypatch):
    (tmp_path / "shape_sample.py").write_text(SAMPLE_CLASSES)
    monkeypatch.syspath_prepend(str(tmp_path))
    found = code_shape.multi_base_classes({"shape_sample": tmp_path / "shape_sample.py"}, tmp_path)
    assert [line.split(":")[1].split(" (")[0] for line in sorted(found)] == \
        ["10 Mixed", "11 Starred", "19 Local"], found
    assert "shape_sample.Writes" in "".join(found)  # the alias is seen through
    acting = code_shape.multi_base_classes({"shape_sample": tmp_path / "shape_sample.py"}, tmp_path,
                                           skip=("shape_sample",))
    assert len(acting) == 6 and all("module not imported" in line for line in acting)  # counted by the statement


def test_no_class_of_the_engine_or_the_dashboard_is_assembled_from_more_than_one_base():
    """Parts, not mixins: a class holds the parts it uses. Only Viewer / Parameterized classes, exceptions and enums
    may sit beside a class's one other base."""
    modules = {name: path for folder, package in (("engine", PACKAGE), ("dashboard", DASHBOARD))
               for name, (path, _) in engine_modules(package=package, folder=folder).items()
               if not name.endswith("__main__")}
    found = code_shape.multi_base_classes(modules, ROOT, skip=ACTING_MODULES)
    assert not found, _report(found, "classes assembled from more than one base (hold the parts instead)")


SAMPLE_STATES = '''
def go(run, store, db):
    """Say when the run is 'running' or finished."""
    if run.status == "running" or run.status in ("paused", "failed"):
        store.update(1, status="killed")
    db.execute("UPDATE runs SET status = 'finished' WHERE id = ?", (1,))
    db.execute("UPDATE runs SET status = ? WHERE id = ?", ("interrupted", 1))
    raise ValueError(f"run {run.id} is running, not finished")

def show(state="idle"):
    colours = {"running": "green", "failed": "red"}
    words = ("queued", "paused")
    return colours, words
'''


def test_the_state_reader_finds_state_names_written_as_text_and_leaves_prose_alone():
    found = code_shape.state_literals(SAMPLE_STATES, {"running", "paused", "failed", "killed", "finished",
                                                      "interrupted", "idle", "queued"})
    assert sorted({line for line, _ in found}) == [4, 5, 6, 7, 10, 11, 12], found
    assert (6, "'finished' in SQL") in found and (5, "status='killed'") in found
    assert (7, "'interrupted' bound in SQL") in found and (10, "state='idle' (a default)") in found
    assert all(line != 8 for line, _ in found)  # the message and the docstring are prose


def test_no_state_of_a_run_sweep_study_or_page_is_written_as_text():
    """Every state is a member of the enums in engine/train/states.py: code compares and writes members, SQL binds
    them as parameters, and the words shown for each live in dashboard/state_words.py."""
    files = [path for path in shape_files() if path != ROOT / FOLDER / "train" / "states.py"]
    found = code_shape.status_literals(files, state_names(), ROOT)
    assert not found, _report(found, "states written as text (use the enum members of invlab.train.states)")


def test_the_length_readers_find_a_long_module_and_a_long_function(tmp_path):
    (tmp_path / "long.py").write_text("def f():\n    \"\"\"Doc.\"\"\"\n" + "    x = 1\n" * 51 + "\n" * 300)
    (tmp_path / "short.py").write_text("def g():\n" + "    x = 1\n" * 50)
    files = sorted(tmp_path.glob("*.py"))
    assert code_shape.long_modules(files, MAX_LINES, tmp_path) == ["long.py:1 353 lines"]
    assert code_shape.long_functions(files, MAX_FUNCTION_LINES, tmp_path) == ["long.py:1 f: 51 lines"]


def test_no_module_of_the_engine_or_the_dashboard_is_over_350_lines():
    found = code_shape.long_modules(shape_files(), MAX_LINES, ROOT)
    assert not found, _report(found, f"modules over {MAX_LINES} lines (split each by job)")


def test_no_function_of_the_engine_or_the_dashboard_is_over_50_lines():
    found = code_shape.long_functions(shape_files(), MAX_FUNCTION_LINES, ROOT)
    assert not found, _report(found, f"functions over {MAX_FUNCTION_LINES} lines below their docstring (split each)")
