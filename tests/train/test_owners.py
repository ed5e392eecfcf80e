"""Owners on a server with logins: runs and sweeps record who started them; a user's store lists and opens only
theirs, an admin's all; without a user nothing changes; old stores gain the column."""
import json
import sqlite3

import pytest

from invlab.train import RunStore, RunStoreError


def test_a_user_lists_and_opens_only_their_own_runs_and_sweeps(tmp_path):
    path = tmp_path / "runs.sqlite"
    with RunStore(path, owner="alice") as alice:
        mine = alice.runs.create("{}", "svgp", "digits")
        sweep = alice.sweeps.create("rotation-choice", "{}", 2)
        swept, _ = alice.sweeps.store_run(sweep, "a", config_json="{}", model="svgp", dataset="digits",
                                         status="finished", step=3, figures={}, history={}, info={})
    with RunStore(path) as cli:  # the command line: no logins, every run
        old = cli.runs.create("{}", "svgp", "digits")
        assert [r.id for r in cli.runs.list()] == [old, swept, mine]
        assert cli.runs.get(mine).owner == "alice" and cli.runs.get(swept).owner == "alice"
        assert cli.runs.get(old).owner is None and cli.sweeps.get(sweep).owner == "alice"
    with RunStore(path, owner="bob") as bob:
        theirs = bob.runs.create("{}", "svgp", "digits")
        assert [r.id for r in bob.runs.list()] == [theirs] and bob.sweeps.list() == []
        for open_ in (lambda: bob.runs.get(mine), lambda: bob.runs.get(old)):
            with pytest.raises(RunStoreError, match=r"belongs to another user of this server, so it is not opened"):
                open_()
        with pytest.raises(RunStoreError, match=f"sweep {sweep} belongs to another user"):
            bob.sweeps.get(sweep)
    with RunStore(path, owner="alice") as alice:
        assert [r.id for r in alice.runs.list()] == [swept, mine] and [s.id for s in alice.sweeps.list()] == [sweep]
    with RunStore(path, owner="lecturer", admin=True) as lecturer:
        assert [r.id for r in lecturer.runs.list()] == [theirs, old, swept, mine]
        assert lecturer.runs.get(theirs).owner == "bob" and [s.id for s in lecturer.sweeps.list()] == [sweep]


def test_a_store_from_before_owners_gains_the_column(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as con:
        con.executescript("""
            CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, updated REAL NOT NULL,
                model TEXT NOT NULL, dataset TEXT NOT NULL, config TEXT NOT NULL, status TEXT NOT NULL,
                step INTEGER NOT NULL DEFAULT 0, elbo REAL, test_error REAL, test_rmse REAL, test_nlpd REAL,
                message TEXT);
            CREATE TABLE sweeps (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, updated REAL NOT NULL,
                name TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL, total INTEGER NOT NULL DEFAULT 0);
            INSERT INTO runs (created, updated, model, dataset, config, status) VALUES (1, 1, 'svgp', 'digits', '{}',
                'finished');
            INSERT INTO sweeps (created, updated, name, spec, status) VALUES (1, 1, 'old', '{}', 'finished');""")
    with RunStore(path) as store:
        assert store.runs.get(1).owner is None and store.sweeps.get(1).owner is None
    with sqlite3.connect(path) as con:
        for table in ("runs", "sweeps"):
            assert "owner" in {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
    with RunStore(path, owner="alice") as alice:  # on a server with logins, a run without an owner is the admins'
        assert alice.runs.list() == []


def test_serve_passes_admins_to_the_page(monkeypatch):
    from invlab.cli import serve_command
    from invlab.dashboard.serving.limits import ServerLimits

    cmd, env = serve_command(["--basic-auth", "users.json", "--admin", "lecturer", "--admin", "ta"])
    assert json.loads(env["INVLAB_ADMINS"]) == ["lecturer", "ta"] and env["INVLAB_BASIC_AUTH"] == "users.json"
    assert ServerLimits.from_env(env).admins == ("lecturer", "ta")
    assert ServerLimits.from_env({}).admins == ()
    _, env = serve_command([])
    assert "INVLAB_ADMINS" not in env
