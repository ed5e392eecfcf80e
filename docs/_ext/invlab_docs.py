"""Pages generated from the code when the documentation is built: the CLI reference from `invlab`'s argparse
parsers, the Python API reference (one page per package, autodoc of every public module) and the notebook gallery
(the stored notebooks, copied beside the pages). Everything lands in `docs/_generated/` (git-ignored) and is
rewritten only when it changed, so an incremental build stays incremental.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import os
import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "_generated"
PACKAGES = ("engine", "dashboard")  # the repository's folders, imported as FOLDERS says
FOLDERS = {"engine": "invlab", "dashboard": "invlab.dashboard"}  # folder → the package it is (setup.py)


def module_path(module: str) -> Path:
    """The folder (package) or the .py-less path of dotted `module` (`invlab.dashboard.explorer.explorer` →
    ROOT/dashboard/explorer)."""
    for folder, name in sorted(FOLDERS.items(), key=lambda item: -len(item[1])):
        if module == name or module.startswith(name + "."):
            return ROOT / folder / Path(*module[len(name):].lstrip(".").split(".") if module != name else ())
    raise ValueError(f"{module} is not a module of invlab")


def module_name(path: Path) -> str:
    """The dotted name `path` (a .py file under engine/ or dashboard/) is imported as."""
    rel = path.relative_to(ROOT).with_suffix("").parts
    parts = [FOLDERS[rel[0]], *rel[1:]]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
# modules that run something when imported (the served page builds an Explorer): listed with their docstring only
SCRIPTS = {"invlab.dashboard.app"}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


# -- README sections, reused as pages' text ----------------------------------------------------------------------------
# where a README link points on the site (paths relative to docs/, where the pages that include the sections live)
# (the sections are written to docs/_generated/readme/, and links in an included file are read from where it lies)
README_LINKS = {"#sweeps": "../../sweeps.md",
                "#which-invariances-does-my-data-have": "../../sweeps.md#which-invariances-does-my-data-have",
                "#your-own-models": "../../own_data.md#your-own-models",
                "#your-own-data": "../../own_data.md#your-own-data", "docs/bad_inputs.md": "../../bad_inputs.md",
                "docs/bad_inputs.md#your-own-data": "../../bad_inputs.md#your-own-data",
                "docs/contributing.md": "../../contributing.md#what-the-tests-hold-the-code-to"}
README_SECTIONS = ("Two commands", "Installing with pip", "The dashboard", "In JupyterLab", "Serving a class",
                   "Command line", "Sweeps", "Model families", "Data", "Your own data",
                   "Using the engine from Python", "Your own models", "Which invariances does my data have?", "Layout")


def readme_section(title: str) -> str:
    """The README's section `title` without its heading, its sub-headings one level up and its links pointed at the
    site's pages (a link to a file that is not a page becomes its name in code)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"#{2,3} " + re.escape(title), line))
    level = len(lines[start].split(" ")[0])
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"#{1,%d} " % level, lines[i])), len(lines))
    body = [line[1:] if line.startswith("###") else line for line in lines[start + 1:end]]
    # a section's sub-sections are sections (or pages) of their own: an included fragment holds no heading
    body = body[:next((i for i, line in enumerate(body) if line.startswith("## ")), len(body))]

    def rewrite(match):
        text, target = match.group(1), match.group(2)
        if target.startswith(("http://", "https://")):
            return match.group(0)
        if target.endswith(".png"):
            return f"[{text}](../images/{Path(target).name})"
        if target in README_LINKS:
            return f"[{text}]({README_LINKS[target]})"
        path = target.split("#")[0]
        return f"`{path}` in the repository" if text == path else f"{text} (`{path}` in the repository)"

    text = "\n".join(body).strip() + "\n"
    return re.sub(r"\[([^\]]*)\]\(([^)\s]+)\)", rewrite, text)


def readme_fragments() -> None:
    """Write each reused README section to `_generated/readme/` and copy the screenshots it shows."""
    for title in README_SECTIONS:
        name = re.sub(r"[^a-z0-9_]", "", title.lower().replace(" ", "_"))
        _write(OUT / "readme" / f"{name}.md", readme_section(title))
    images = OUT / "images"
    images.mkdir(parents=True, exist_ok=True)
    for png in sorted([*(ROOT / "dashboard" / "screenshots").glob("*.png"), *(ROOT / "docs" / "images").glob("*.png")]):
        if not (images / png.name).exists() or (images / png.name).read_bytes() != png.read_bytes():
            shutil.copyfile(png, images / png.name)


# -- the CLI reference -----------------------------------------------------------------------------------------------
class _Captured(Exception):
    def __init__(self, parser):
        super().__init__(parser.prog)
        self.parser = parser


def command_parser(name: str) -> argparse.ArgumentParser:
    """The argparse parser `invlab NAME --help` prints, caught as it is about to print."""
    from invlab.cli import COMMANDS

    def capture(parser, file=None):
        raise _Captured(parser)

    saved = argparse.ArgumentParser.print_help
    argparse.ArgumentParser.print_help = capture
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            COMMANDS[name](["--help"])
    except _Captured as caught:
        return caught.parser
    finally:
        argparse.ArgumentParser.print_help = saved
    raise RuntimeError(f"`invlab {name} --help` printed no argparse help")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _flag_rows(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    out = []
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if a.help is not argparse.SUPPRESS]
        if not actions:
            continue
        out += ["", f"**{_cell(group.title or 'options')}**", "", "| flag | meaning |", "|---|---|"]
        for action in actions:
            flag = ", ".join(action.option_strings) or action.dest
            if action.option_strings and action.nargs != 0:
                flag += " " + formatter._format_args(action, formatter._get_default_metavar_for_optional(action))
            help_text = formatter._expand_help(action) if action.help else ""
            out.append(f"| `{_cell(flag)}` | {_cell(help_text)} |")
    return out


def cli_page() -> str:
    """The CLI reference in Markdown: each `invlab` subcommand's usage, description and flags, from its parser."""
    from invlab import cli

    lines = ["# Command-line reference", "",
             "Generated from `invlab`'s own argparse parsers when these pages are built, so it matches the installed "
             "version. `invlab COMMAND --help` prints the same. `invlab train`'s model options depend on "
             "`--model`: `invlab train --model NAME --help` lists a family's own.", "",
             "```text", cli.__doc__.strip(), "```"]
    for name in cli.COMMANDS:
        parser = command_parser(name)
        lines += ["", f"(cli-{name})=", f"## invlab {name}", ""]
        if parser.description:
            lines += [_cell(parser.description), ""]
        lines += ["```text", parser.format_usage().strip(), "```"]
        lines += _flag_rows(parser)
        if parser.epilog:
            lines += ["", "```text", parser.epilog.strip(), "```"]
    return "\n".join(lines) + "\n"


# -- the API reference -----------------------------------------------------------------------------------------------
def public_modules(package: str) -> list[str]:
    """Dotted names of `package`'s public modules (no part starting with an underscore), packages first."""
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("").parts
        if rel[-1] == "__main__" or any(p.startswith("_") for p in rel if p != "__init__"):
            continue
        names.append(module_name(path))
    return sorted(set(names), key=lambda n: (n.split("."), ))


def api_groups() -> dict[str, list[str]]:
    """One API page per top-level package or subpackage: its name → the modules it documents."""
    groups: dict[str, list[str]] = {}
    for package in PACKAGES:
        top = FOLDERS[package]
        for module in public_modules(package):
            parts = module.split(".")
            depth = len(top.split(".")) + 1  # invlab.train, invlab.dashboard.compare
            key = ".".join(parts[:depth]) if len(parts) >= depth and module_path(".".join(parts[:depth])).is_dir() \
                else top
            groups.setdefault(key, []).append(module)
    return groups


def _module_docstring(module: str) -> str:
    path = module_path(module)
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""


def _shadowing_members(module: str) -> dict[str, str]:
    """Public functions and classes of package `module` that share a submodule's name → their docstrings."""
    path = module_path(module) / "__init__.py"
    if not path.exists():
        return {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    submodules = {p.stem for p in path.parent.glob("*.py")} | {p.name for p in path.parent.iterdir() if p.is_dir()}
    return {node.name: ast.get_docstring(node) or "" for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in submodules}


def api_page(group: str, modules: list[str]) -> str:
    """The API page of `group`: autodoc of each module's public members."""
    lines = [f"# `{group}`", ""]
    for module in modules:
        if module in SCRIPTS:
            lines += [f"(module-{module})=", f"## `{module}`", "", "```text", _module_docstring(module), "```", ""]
            continue
        shadowed = _shadowing_members(module)
        lines += ["```{eval-rst}", f".. automodule:: {module}", "   :members:", "   :show-inheritance:",
                  "   :ignore-module-all:"] + ([f"   :exclude-members: {', '.join(shadowed)}"] if shadowed else [])
        lines += ["```", ""]
        for name, doc in shadowed.items():  # a function named like a submodule: the module's anchor is taken
            lines += [f"`{module}.{name}(...)` (the function, not the submodule)", f": {_cell(doc)}", ""]
    return "\n".join(lines)


def api_index(groups: dict[str, list[str]]) -> str:
    """The API reference's front page: a table of contents over the package pages."""
    lines = ["# Python API reference", "",
             "Every public module of the engine and the dashboard, generated from the docstrings (autodoc). Shapes use "
             "the glossary letters: N data points, M inducing points, D input dimensions, P patches or orbit size, "
             "S samples, L outputs.", "", "```{toctree}", ":maxdepth: 1", ""]
    lines += [f"{group}" for group in groups]
    return "\n".join(lines + ["```", ""])


# -- the notebook gallery --------------------------------------------------------------------------------------------
def copy_notebooks() -> list[str]:
    """Copy the stored teaching notebooks beside the pages; returns their names (without .ipynb)."""
    target = OUT / "notebooks"
    target.mkdir(parents=True, exist_ok=True)
    names = []
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        dest = target / nb.name
        if not dest.exists() or dest.read_bytes() != nb.read_bytes():
            shutil.copyfile(nb, dest)
        names.append(nb.stem)
    for stale in target.glob("*.ipynb"):
        if stale.stem not in names:
            stale.unlink()
    return names


def gallery_page(names: list[str]) -> str:
    """The gallery's front page: a table of contents over the notebooks."""
    executed = os.environ.get("INVLAB_DOCS_FAST") != "1"
    how = ("executed when these pages were built" if executed else
           "shown as stored, without their outputs (a fast build; `make docs` executes them)")
    lines = ["# Notebook gallery", "",
             f"The teaching notebooks of `notebooks/`, one per paper family plus the dashboard in JupyterLab, {how}. "
             "`make lab` opens them in JupyterLab.", "", "```{toctree}", ":maxdepth: 1", ""]
    lines += [f"notebooks/{name}" for name in names]
    return "\n".join(lines + ["```", ""])


def generate(app=None) -> None:
    """Write every generated page (a `builder-inited` handler)."""
    readme_fragments()
    _write(OUT / "cli.md", cli_page())
    groups = api_groups()
    _write(OUT / "api" / "index.md", api_index(groups))
    for group, modules in groups.items():
        _write(OUT / "api" / f"{group}.md", api_page(group, modules))
    _write(OUT / "gallery.md", gallery_page(copy_notebooks()))


# -- docstrings: plain text with formulas, read as reStructuredText ---------------------------------------------------
_INLINE = re.compile(r"(``.*?``|`[^`]+`)")


def _escape_text(text: str) -> str:
    """Plain prose as reStructuredText: `x` becomes a literal, and |, * and a word's trailing _ lose their markup."""
    out: list[str] = []
    for i, part in enumerate(_INLINE.split(text)):
        if i % 2:  # a `code` span: a literal, whatever it holds
            inner = part.strip("`")
            if inner.strip() != inner:
                out.append(part.replace("`", "\\`"))
                continue
            part = f"``{inner}``"
            if out and out[-1][-1:].isalnum():
                part = "\\ " + part  # markup must start after a space or a mark: an escaped space joins them
        else:
            glue = "\\ " if out and out[-1].endswith("``") and part[:1].isalnum() else ""  # `Tunable`s
            part = part.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("`", "\\`")
            part = glue + re.sub(r"(?<=\w)_(?=\W|$)", r"\\_", part)
        out.append(part)
    return "".join(out)


def plain_docstring(lines: list[str]) -> list[str]:
    """The engine's docstrings are plain text: prose, with formulas and examples indented under a paragraph. Turn
    each indented run into a literal block (a blank line and `::` before it, a blank line after) and escape the
    prose, so docutils shows them as written instead of warning about block quotes and substitutions."""
    out: list[str] = []
    base = None
    in_block = False
    item = False  # inside a "- " list item, whose continuation lines are indented by two
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if not line.strip():
            out.append("")
            continue
        if base is None:
            base = indent
        if item and not in_block and indent == base + 2:
            out.append(_escape_text(line))
            continue
        starts_item = indent == base and line.lstrip().startswith(("- ", "* "))
        if out and out[-1] != "" and not in_block and starts_item != item:
            out.append("")  # a list starts or ends: docutils wants a blank line between it and the prose
        item = starts_item
        if indent > base:
            if not in_block:
                if out and out[-1] != "":
                    out.append("")
                out += ["::", ""]
                in_block = True
            out.append(line)
            continue
        if in_block:
            if out[-1] != "":
                out.append("")
            in_block = False
        out.append(_escape_text(line))
    return out


def _process_docstring(app, what, name, obj, options, lines):
    lines[:] = plain_docstring(lines)


def setup(app):
    """Sphinx extension entry point: generate the pages before the sources are read."""
    app.connect("builder-inited", generate)
    app.connect("autodoc-process-docstring", _process_docstring, priority=400)  # before napoleon reads sections
    return {"parallel_read_safe": True, "parallel_write_safe": True}
