"""The README's code blocks, as its section tests run them."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def section_blocks(title: str) -> list[tuple[str, str]]:
    """[(kind, code)] of the ```python and ```bash blocks of the README's "## title" section, in order."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {title}\n")
    body = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"```(python|bash)\n(.*?)```", body, flags=re.S)


def run_python_blocks(blocks, folder: Path, monkeypatch) -> dict:
    """Run the Python blocks in one namespace, in order, from `folder` with the data directory inside it; returns
    the namespace."""
    monkeypatch.chdir(folder)
    monkeypatch.setenv("INVLAB_DATA", str(folder / "data"))
    namespace: dict = {}
    for kind, code in blocks:
        if kind == "python":
            exec(compile(code, "README.md", "exec"), namespace)
    return namespace
