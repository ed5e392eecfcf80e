"""What the teaching notebooks say, read from the files a user gets (they also ship in the package):
citations a reader can follow (what they print is checked as they run in JupyterLab, tests/jupyter/)."""
import json
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
