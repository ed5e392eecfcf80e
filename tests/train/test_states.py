"""Run, page, sweep, study and health states are named once (`invlab.train.states`): each member equals, prints and is
stored as its text, so stored runs and JSON read back unchanged; and no module of the engine or the dashboard
compares a status or a state with a bare string of its own."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from invlab.train import RunStore
from invlab.train.states import SESSION_STATES, HealthState, PageState, RunStatus, StudyState, SweepStatus

ROOT = Path(__file__).resolve().parents[2]
NAMES = {member.value for enum in (RunStatus, PageState, SweepStatus, StudyState, HealthState)
         for member in enum}


@pytest.mark.parametrize("member", [RunStatus.FINISHED, PageState.PAUSING, SweepStatus.INCOMPLETE,
                                    StudyState.STOPPING])
def test_a_state_is_its_text_everywhere(member):
    text = member.value
    assert member == text and str(member) == text and f"{member}" == text and f"{member:>12}" == f"{text:>12}"
    assert json.dumps({"status": member}) == json.dumps({"status": text})
    assert {text: 1}[member] == 1  # a dict keyed by text is read by the member, and back


def test_a_status_is_stored_as_text_and_read_back_as_its_member(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        run_id = store.runs.create("{}", "svgp", "digits", status=RunStatus.CREATED)
        store.runs.update(run_id, status=RunStatus.PAUSED)
        record = store.runs.get(run_id)
        assert record.status is RunStatus.PAUSED and record.status == "paused"
    finally:
        store.close()
    import sqlite3

    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        assert db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone() == ("paused",)


def test_the_sessions_states_are_page_states():
    assert set(SESSION_STATES) <= set(PageState) and PageState.PAUSING not in SESSION_STATES


def _bare_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of each comparison of an `.status` / `.state` (or `status` / `state`) with a string literal
    (or a tuple of them) that names a state."""
    def named(node) -> bool:
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "future":
            return False  # a Dask future's own status ("finished", "error"), not one of ours
        target = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        return target in ("status", "state")

    def literals(node) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return []

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and named(node.left):
            found += [(node.lineno, text) for right in node.comparators for text in literals(right) if text in NAMES]
    return found


def test_no_module_compares_a_status_or_state_with_its_bare_text():
    offending = []
    for folder in ("engine", "dashboard"):
        for path in (ROOT / folder).rglob("*.py"):
            offending += [f"{path.relative_to(ROOT)}:{line} {text!r}"
                          for line, text in _bare_comparisons(ast.parse(path.read_text(encoding="utf-8")))]
    assert not offending, f"compare with invlab.train.states' members instead: {offending}"


def test_the_check_finds_a_bare_comparison():
    assert _bare_comparisons(ast.parse('if run.status == "finished" or state in ("idle", "x"): pass')) == [
        (1, "finished"), (1, "idle")]
