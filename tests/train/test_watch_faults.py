"""`invlab.train.watch` when the loop around it misbehaves: a nested watch of the same name (a helper that watches
its own loop, called inside a watched loop) records its own run instead of refusing this very process as "another
process" and failing the outer run; Ctrl-C in the block leaves the run `interrupted` (resumable), not `failed`; an
exception with a huge message is stored cut to a bound, with a marker saying so."""
from __future__ import annotations

import os

import pytest

from invlab.train import RunStore, watch


def test_a_nested_watch_of_the_same_name_records_its_own_run_and_the_outer_run_finishes(tmp_path):
    with watch(name="loop", data_dir=tmp_path) as outer:
        outer.log(1, loss=1.0)
        with watch(name="loop", data_dir=tmp_path) as inner:
            inner.log(1, loss=0.5)
        outer.log(2, loss=0.25)
    with RunStore(tmp_path / "runs.sqlite") as store:
        runs = {record.id: record for record in store.runs.list()}
    assert inner.run_id != outer.run_id
    assert (runs[outer.run_id].name, runs[outer.run_id].status, runs[outer.run_id].step) == ("loop", "finished", 2)
    assert (runs[inner.run_id].name, runs[inner.run_id].status, runs[inner.run_id].message) == (
        "loop", "finished", None)


def test_ctrl_c_in_the_block_leaves_the_run_interrupted_with_its_step(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        with watch(name="stopped", data_dir=tmp_path) as run:
            run.log(1, loss=1.0)
            run.log(2, loss=0.5)
            raise KeyboardInterrupt
    with RunStore(tmp_path / "runs.sqlite") as store:
        record = store.runs.get(run.run_id)
    assert (record.status, record.step) == ("interrupted", 2)
    assert "KeyboardInterrupt" in record.message and "step 2" in record.message


def test_a_huge_exception_message_is_stored_cut_with_a_marker(tmp_path):
    from invlab.train.watch import MAX_MESSAGE

    huge = "x" * 2_000_000
    with pytest.raises(ValueError):
        with watch(name="loud", data_dir=tmp_path) as run:
            run.log(1, loss=1.0)
            raise ValueError(huge)
    with RunStore(tmp_path / "runs.sqlite") as store:
        record = store.runs.get(run.run_id)
    assert record.status == "failed"
    assert len(record.message) <= MAX_MESSAGE
    assert record.message.startswith("ValueError: xxx")
    assert record.message.endswith("(cut: 2,000,012 characters in all)")
    assert os.path.getsize(tmp_path / "runs.sqlite") < 1_000_000
