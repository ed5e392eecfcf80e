"""The run store's shape: one connection handed to small repositories (runs, checkpoints, metrics, views, sweeps,
leases, owners) that read only what they define or were given; statuses bound as SQL parameters; `killed`."""
import ast
import io
import os
import re
import socket
import subprocess
import sys
import time
import tokenize
from pathlib import Path

import numpy as np

from invlab.diagnostics import Scalars
from invlab.train import RunStore
from invlab.train.states import RunStatus

RUNSTORE = Path(__file__).resolve().parents[2] / "engine" / "train" / "runstore"
STORE = RUNSTORE.parent / "store.py"
STATUS_WORDS = "|".join(m.value for m in RunStatus) + "|killed|incomplete"


def test_a_resumed_run_drops_the_views_stored_past_its_checkpoint(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        rid = store.runs.create("{}", "svgp", "digits")
        store.views.save(rid, 10, {"early": Scalars(values={"a": 1.0})})
        store.flush()
        store.views.save(rid, 30, {"late": Scalars(values={"a": 2.0}), "early": Scalars(values={"a": 3.0})})
        store.views.save(rid, 20, {"middle": Scalars(values={"b": np.float64(1.0)})})
        store.flush()
        store.runs.truncate(rid, 20)
        kept = store.views.read(rid)
        # the views stored at step 30 show pictures of steps the resumed run no longer has
        assert sorted(kept.views) == ["middle"] and kept.step == 20


def test_no_sql_in_the_run_store_holds_a_status_word():
    found = []
    for path in [STORE, *sorted(RUNSTORE.glob("*.py"))]:
        for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
            if token.type == tokenize.STRING and re.search(rf"'({STATUS_WORDS})'", token.string):
                found.append(f"{path.name}:{token.start[0]}: {token.string.strip()[:60]}")
    assert not found, "statuses are bound as parameters (status = ?), not written in SQL:\n" + "\n".join(found)


def test_a_run_whose_process_ended_while_it_trained_reads_back_killed(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    rid = store.runs.create("{}", "svgp", "digits")
    store.runs.update(rid, status=RunStatus.RUNNING)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with store.connection.db:
        store.connection.db.execute("UPDATE runs SET writer_pid = ?, writer_host = ?, writer_token = NULL, updated = ? "
                          "WHERE id = ?", (int(dead.stdout), socket.gethostname(), time.time(), rid))
    status = store.runs.get(rid).status
    assert status is RunStatus.KILLED and status == "killed"
    assert "invlab train --resume" in store.runs.get(rid).message
    store.close()
    assert os.getpid() != int(dead.stdout)


def _self_reads(cls: ast.ClassDef) -> tuple[set[str], set[str]]:
    """(attributes read through `self`, attributes the class defines: methods, class attributes, `self.x =`)."""
    defined, read = set(), set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(t.id for t in targets if isinstance(t, ast.Name))
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            (defined if isinstance(node.ctx, ast.Store) else read).add(node.attr)
    return read, defined


def test_every_store_class_has_one_base_and_reads_only_what_it_defines_or_was_given():
    problems = []
    for path in [STORE, *sorted(RUNSTORE.glob("*.py"))]:
        for cls in (n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.ClassDef)):
            if len(cls.bases) > 1:
                problems.append(f"{path.name}: {cls.name} has {len(cls.bases)} bases")
            read, defined = _self_reads(cls)
            dunder = {a for a in read if a.startswith("__")}
            if cls.bases and not all(isinstance(b, ast.Name) and b.id == "object" for b in cls.bases):
                continue  # a dataclass / exception / enum base defines what it reads
            if read - defined - dunder:
                problems.append(f"{path.name}: {cls.name} reads {sorted(read - defined - dunder)} it neither "
                                "defines nor was given")
    assert not problems, "\n".join(problems)


def test_the_store_hands_out_its_repositories(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        for name in ("runs", "checkpoints", "metrics", "views", "sweeps", "leases"):
            assert getattr(store, name).connection is store.connection, name
        assert store.runs.owners is store.sweeps.owners is store.owners and store.owners.owner is None
        assert type(store).__bases__ == (object,)
