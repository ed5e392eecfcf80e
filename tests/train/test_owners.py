"""Owners on a server with logins: runs and sweeps record who started them; a user's store lists and opens only
theirs, an admin's all; without a user nothing changes; old stores gain the column."""
import json
import sqlite3

import pytest

from invlab.train import RunStore, RunStoreError


def test_a_user_lists_and_opens_only_their_own_runs_and_sweeps(tmp_path):
    path = tmp_path / "runs.sqlite"
    with RunStore(path, owner="alice") as alice:
        mine = alice.create_run("{}", "svgp", "digits")
        sweep = alice.create_sweep("rotation-choice", "{}", 2)
        swept, _ = alice.store_sweep_run(sweep, "a", config_json="{}", model="svgp", dataset="digits",
                                         status="finished", step=3, figures={}, history={}, info={})
    with RunStore(path) as cli:  # the command line: no logins, every run
        old = cli.create_run("{}", "svgp", "digits")
        assert [r.id for r in cli.list_runs()] == [old, swept, mine]
        assert cli.get_run(mine).owner == "alice" and cli.get_run(swept).owner == "alice"
        assert cli.get_run(old).owner is None and cli.get_sweep(sweep).owner == "alice"
    with RunStore(path, owner="bob") as bob:
        theirs = bob.create_run("{}", "svgp", "digits")
        assert [r.id for r in bob.list_runs()] == [theirs] and bob.list_sweeps() == []
        for open_ in (lambda: bob.get_run(mine), lambda: bob.get_run(old)):
            with pytest.raises(RunStoreError, match=r"belongs to another user of this server, so it is not opened"):
                open_()
        with pytest.raises(RunStoreError, match=f"sweep {sweep} belongs to another user"):
            bob.get_sweep(sweep)
    with RunStore(path, owner="alice") as alice:
        assert [r.id for r in alice.list_runs()] == [swept, mine] and [s.id for s in alice.list_sweeps()] == [sweep]
    with RunStore(path, owner="lecturer", admin=True) as lecturer:
        assert [r.id for r in lecturer.list_runs()] == [theirs, old, swept, mine]
        assert lecturer.get_run(theirs).owner == "bob" and [s.id for s in lecturer.list_sweeps()] == [sweep]


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
        assert store.get_run(1).owner is None and store.get_sweep(1).owner is None
    with sqlite3.connect(path) as con:
        for table in ("runs", "sweeps"):
            assert "owner" in {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
    with RunStore(path, owner="alice") as alice:  # on a server with logins, a run without an owner is the admins'
        assert alice.list_runs() == []


def test_serve_passes_admins_to_the_page(monkeypatch):
    from invlab.cli import serve_command
    from invlab.dashboard.serving.limits import ServerLimits

    cmd, env = serve_command(["--basic-auth", "users.json", "--admin", "lecturer", "--admin", "ta"])
    assert json.loads(env["INVLAB_ADMINS"]) == ["lecturer", "ta"] and env["INVLAB_BASIC_AUTH"] == "users.json"
    assert ServerLimits.from_env(env).admins == ("lecturer", "ta")
    assert ServerLimits.from_env({}).admins == ()
    _, env = serve_command([])
    assert "INVLAB_ADMINS" not in env
