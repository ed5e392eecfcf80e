"""docs/bad_inputs.md lists every case of this package, and every row has a test."""

from pathlib import Path

from tests.bad_inputs.api_cases import API
from tests.bad_inputs.test_api import PREDICT
from tests.bad_inputs.test_command_lines import LINES


def test_the_published_table_lists_every_case():
    """docs/bad_inputs.md is this package as a table: each case id appears there, and each row is a case or a
    test of this package (its name without `test_`)."""
    import re

    text = (Path(__file__).parents[2] / "docs" / "bad_inputs.md").read_text()
    ids = [line.id for line in LINES] + list(API) + list(PREDICT)
    missing = [i for i in ids if f"`{i}`" not in text]
    assert not missing, f"add these cases to docs/bad_inputs.md: {missing}"
    listed = set(re.findall(r"^\| `([a-z0-9_-]+)` \|", text, flags=re.M))
    tests_here = {name for module in Path(__file__).parent.glob("test_*.py")
                  for name in re.findall(r"^def test_(\w+)\(", module.read_text(), flags=re.M)}
    unknown = sorted(listed - set(ids) - tests_here)
    assert not unknown, f"rows without a test: {unknown}"
