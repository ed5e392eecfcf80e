"""The documentation site builds from the repository with no warning, and its generated pages cover the code.

One fast build (the notebooks shown as stored, not executed: `INVLAB_DOCS_FAST=1`, what `make docs-fast` does) with
warnings as errors, into a scratch folder; then: the API reference has an entry for every public module and every
public name the docstring test counts, the CLI reference a section for every `invlab` subcommand with its flags, and
the bad-input table, the notebook gallery and the README-based pages are there. About two minutes on 2 cores.
"""
from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_docstrings import public_files

pytest.importorskip("sphinx", reason="the docs extra is not installed: pip install -e '.[docs]'")
pytest.importorskip("myst_nb", reason="the docs extra is not installed: pip install -e '.[docs]'")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import invlab_docs  # noqa: E402  (the generator of the site's CLI, API and gallery pages)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site's folder; the build's output is checked for warnings here, once."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "INVLAB_DOCS_FAST": "1", "PYTHONPATH": str(ROOT),
           "INVLAB_DATA": str(tmp_path_factory.mktemp("data"))}
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / ".doctrees"), str(ROOT / "docs"), str(out / "html")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}"
    assert "WARNING" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr[-5000:]
    return out / "html"


def _ids(folder: Path) -> set[str]:
    return {html.unescape(i) for page in folder.rglob("*.html") for i in re.findall(r'id="([^"]+)"', page.read_text())}


def _qualnames(path: Path) -> list[str]:
    """Public module-level functions and classes of `path` and their public methods, as `module.Qual.name`."""
    import ast

    module = invlab_docs.module_name(path)
    names = []

    def walk(body, prefix):
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or node.name.startswith("_"):
                continue
            if any(ast.unparse(d).endswith((".setter", ".deleter")) for d in node.decorator_list):
                continue
            names.append(f"{prefix}{node.name}")
            if isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}.")

    walk(ast.parse(path.read_text(encoding="utf-8")).body, f"{module}.")
    return names


def test_the_api_reference_has_every_public_module_and_name(site):
    ids = _ids(site / "_generated" / "api")
    modules = [m for package in invlab_docs.PACKAGES for m in invlab_docs.public_modules(package)]
    assert "invlab.train.trainer" in modules and "invlab.dashboard.explorer.explorer" in modules
    missing = [m for m in modules if f"module-{m}" not in ids and f"module-{m.replace('.', '-')}" not in ids]
    assert not missing, f"modules without an API entry: {missing}"
    names = [n for path in public_files() if path.name != "__main__.py" for n in _qualnames(path)
             if n.rsplit(".", 1)[0] not in invlab_docs.SCRIPTS and not n.startswith(tuple(invlab_docs.SCRIPTS))]
    assert "invlab.train.trainer.Trainer.step" in names and "invlab.dashboard.explorer.explorer.Explorer.start" in names
    shadowed = {f"{m}.{name}" for m in modules for name in invlab_docs._shadowing_members(m)}
    missing = [n for n in names if n not in ids and n not in shadowed]
    assert not missing, f"{len(missing)} public names without an API entry:\n" + "\n".join(missing)
    page = (site / "_generated" / "api" / "invlab.train.html").read_text()
    assert "One optimiser step under the lock" in page  # the docstring itself, not only the name


def test_the_cli_reference_lists_every_subcommand_and_its_flags(site):
    from invlab.cli import COMMANDS

    page = (site / "_generated" / "cli.html").read_text()
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for name in COMMANDS:
        assert f'id="invlab-{name}"' in page, f"no section for invlab {name}"
        parser = invlab_docs.command_parser(name)
        for action in parser._actions:
            for flag in action.option_strings:
                assert flag in text, f"invlab {name}: {flag} is not on the CLI page"


def test_the_other_pages_are_built_from_the_repository(site):
    bad = (site / "bad_inputs.html").read_text()
    table_ids = re.findall(r"^\| `?([a-z0-9_]+)`? \|", (ROOT / "docs" / "bad_inputs.md").read_text(), re.M)
    assert len(table_ids) > 20 and all(i in bad for i in table_ids)
    gallery = (site / "_generated" / "gallery.html").read_text()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        assert (site / "_generated" / "notebooks" / f"{nb.stem}.html").exists()
        assert f"notebooks/{nb.stem}.html" in gallery
    start = html.unescape(re.sub(r"<[^>]+>", "", (site / "getting_started.html").read_text()))
    assert "make run" in start and "make test" in start  # the README's two commands, included
    assert "pip install 'invariance-lab[dashboard]'" in start  # and how a pip user installs by need
    assert (site / "_images" / "lesson.png").exists() and "lesson.png" in (site / "dashboard.html").read_text()
    assert "InterDomainVariationalStrategy" in (site / "gpytorch.html").read_text()  # the GPyTorch users' page
    contributing = html.unescape(re.sub(r"<[^>]+>", "", (site / "contributing.html").read_text()))
    assert "store.runs" in contributing and "open_run" in contributing  # the README's layout, included
    assert "more than one base" in contributing  # and what the tests hold the code to
    for family in ("invariant", "convolutional", "rkhs", "gwi", "dkp", "svgp"):
        page = (site / "families" / f"{family}.html").read_text()
        shown = re.findall(r'<img[^>]+src="\.\./(_images/[^"]+)"', page)  # each family page has its figure
        assert shown and all((site / src).is_file() for src in shown), family


def test_the_site_loads_nothing_from_another_host(site):
    """Opened from disk on a machine without internet access, every page has its scripts, styles and images."""
    for page in site.rglob("*.html"):
        remote = re.findall(r'<(?:script|link|img)[^>]+(?:src|href)="((?:https?:)?//[^"]+)"', page.read_text())
        assert not remote, f"{page.relative_to(site)} loads {remote}"



def test_the_notebooks_formulas_are_typeset_by_a_local_mathjax(site):
    """A notebook's `$…$` formula becomes MathJax markup, typeset by a MathJax copy inside the site; a shell variable
    written `$INVLAB_DATA` on the bad-input page stays text."""
    page = (site / "_generated" / "notebooks" / "05_deep_kernel_processes.html").read_text()
    assert r"\(G_2\)" in page or r"\(G_{2}\)" in page
    scripts = re.findall(r'<script[^>]+src="([^"]*mathjax[^"]*)"', page)
    assert scripts and all(not s.startswith(("http", "//")) for s in scripts)
    assert all((site / "_generated" / "notebooks" / s.split("?")[0]).resolve().is_file() for s in scripts)
    bad = html.unescape(re.sub(r"<[^>]+>", "", (site / "bad_inputs.html").read_text()))
    assert "$INVLAB_DATA" in bad
