"""What the teaching notebooks say and print, read from the files a user gets (they also ship in the package):
citations a reader can follow, and no warning in a notebook's output."""
import json
import os
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
PAPERS = {"01": "1808.05563", "02": "1709.01894", "03": "proceedings.neurips.cc", "04": "2205.06342",
          "05": "2010.01590", "07": "1709.01894"}


def text_of(path: Path) -> str:
    return "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebooks_cite_papers_a_reader_can_find(path):
    """No notebook points at a folder the reader does not have; each paper's notebook names it by title, authors,
    year and a link (arXiv, or the proceedings where there is no arXiv copy)."""
    text = text_of(path)
    assert "shared/papers" not in text and not re.search(r"paper 00\d", text)
    key = path.name[:2]
    if key in PAPERS:
        header = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
        assert PAPERS[key] in header and re.search(r"\(20\d\d\)|20\d\d\)", header), header[:400]


def test_notebook_05_prints_no_warning(monkeypatch):
    """Its Wishart check sampled around a kernel matrix that tracked gradients: torch warned on every float()."""
    import nbclient
    import nbformat

    path = next(p for p in NOTEBOOKS if p.name.startswith("05"))
    notebook = nbformat.read(path, as_version=4)
    monkeypatch.setenv("INVLAB_QUICK", os.environ.get("INVLAB_QUICK") or "1")  # a tenth of the steps: seconds
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    said = [o.get("text", "") for cell in notebook.cells for o in cell.get("outputs", [])
            if o.get("name") == "stderr"]
    assert not any("Warning" in text for text in said), said
