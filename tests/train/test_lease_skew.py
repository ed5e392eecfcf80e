"""A run's lease when its holder's clock is not this machine's: a heartbeat stamped more than a lease period in the
future (another host's clock far ahead, a clock set wrong) counts as stale, so the run is not held for years; one a
little ahead still holds it, and the refusal says who holds it, when it was last heard from and when its lease lapses
(the moment the run can be taken over), instead of nothing."""
from __future__ import annotations

import sqlite3
import time

import pytest

from invlab.train import RunStore, RunStoreError
from invlab.train.store import LEASE_SECONDS

YEARS = 5 * 365 * 24 * 3600.0


def held_on_another_host(db, updated: float) -> None:
    """Run 1 marked `running` by pid 4242 on another machine, with heartbeat `updated` (seconds since the epoch)."""
    with sqlite3.connect(db) as con:
        con.execute("UPDATE runs SET status = 'running', updated = ?, writer_pid = 4242, writer_host = 'far-host', "
                    "writer_token = NULL, writer_lease = 'theirs' WHERE id = 1", (updated,))


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "runs.sqlite"
    with RunStore(path) as store:
        store.runs.create("{}", "svgp", "digits", status="interrupted")
    return path


def test_a_heartbeat_years_in_the_future_does_not_hold_the_run(db):
    held_on_another_host(db, time.time() + YEARS)
    with RunStore(db) as store:
        assert store.leases.live_writer(1) is None
        lease = store.leases.claim_run(1)
        assert store.leases.live_writer(1, lease) is None
        assert store.runs.get(1).status == "running"


def test_a_run_whose_holder_was_heard_from_years_ahead_is_listed_killed(db):
    held_on_another_host(db, time.time() + YEARS)
    with RunStore(db) as store:  # opening the store marks the runs whose writers are gone
        store.leases.mark_killed()
        record = store.runs.get(1)
    assert record.status == "killed" and "pid 4242 on far-host" in record.message


def test_a_heartbeat_a_little_ahead_still_holds_and_the_refusal_says_when_the_lease_lapses(db):
    ahead = time.time() + 120  # a clock two minutes fast: the holder is alive, its lease holds
    held_on_another_host(db, ahead)
    with RunStore(db) as store:
        with pytest.raises(RunStoreError) as refused:
            store.leases.claim_run(1)
    text = str(refused.value)
    assert "pid 4242 on far-host" in text
    assert time.strftime("%Y-%m-%d %H:%M", time.localtime(ahead)) in text  # its last heartbeat
    assert "ahead of this machine's clock" in text
    lapses = time.strftime("%Y-%m-%d %H:%M", time.localtime(ahead + LEASE_SECONDS))
    assert f"lapses at {lapses}" in text and "invlab train --resume 1" in text


def test_a_refusal_of_a_current_holder_names_its_heartbeat_and_when_it_lapses(db):
    beat = time.time() - 60
    held_on_another_host(db, beat)
    with RunStore(db) as store:
        with pytest.raises(RunStoreError) as refused:
            store.leases.claim_run(1)
    text = str(refused.value)
    assert "still being trained by another process (pid 4242 on far-host" in text
    assert f"last heard from at {time.strftime('%Y-%m-%d %H:%M', time.localtime(beat))}" in text
    assert "ahead of this machine's clock" not in text
    assert f"lapses at {time.strftime('%Y-%m-%d %H:%M', time.localtime(beat + LEASE_SECONDS))}" in text
