"""What a class server's logins check against: the users and their passwords, ended logins, and wrong passwords.

`Users` is `invlab serve --basic-auth`'s value: a JSON file of `{"name": "password"}` (re-read whenever it changes,
so a user taken out of it is out at their next request), or one password shared by everyone. Passwords are compared
in constant time. `LoginRecord` keeps, in `logins.sqlite` in the data directory, the logins ended by a logout (until
their cookie would have expired anyway) and the recent wrong passwords per user and per address; SQLite because the
record must outlive a restart of the server and be the same for each of its processes (`--num-procs`).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path

log = logging.getLogger("invlab.dashboard")

MAX_WRONG_PER_USER = 5  # wrong passwords for one user name within WINDOW_S before its logins are refused
MAX_WRONG_PER_ADDRESS = 50  # from one address: a class behind one router shares it, so a bigger allowance
WINDOW_S = 300.0
LOCKED_S = 300.0  # how long logins stay refused after the last allowed wrong password


def _digest(text: str) -> bytes:
    # equal-length digests, so comparing them takes the same time whatever the lengths of the passwords
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class Users:
    """The users a server lets in: `source` is a JSON file of names and passwords, or one shared password."""

    def __init__(self, source: str):
        self.source = source
        self.file = Path(source) if os.path.isfile(source) else None
        self._stamp: tuple | None = None
        self._passwords: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def _current(self) -> dict[str, bytes]:
        """The file's users, read again when its modification time or size changed; none when it is gone or not a
        JSON object of names and passwords (nobody is let in rather than the wrong people)."""
        try:
            st = self.file.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        with self._lock:
            if stamp != self._stamp:
                self._stamp, self._passwords = stamp, self._read() if stamp else {}
            return self._passwords

    def _read(self) -> dict[str, bytes]:
        try:
            users = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            log.error("the users file %s cannot be read (%s): nobody can log in until it is fixed", self.file, err)
            return {}
        if not isinstance(users, dict) or not all(isinstance(v, str) for v in users.values()):
            log.error("the users file %s is not a JSON object of user names and passwords: nobody can log in "
                      "until it is fixed", self.file)
            return {}
        return {str(name): _digest(password) for name, password in users.items()}

    def known(self, user: str) -> bool:
        """Whether `user` may be logged in now: listed in the users file (any name with a shared password)."""
        return self.file is None or user in self._current()

    def check(self, user: str, password: str) -> bool:
        """Whether `password` is `user`'s (or the shared one), compared in constant time."""
        if self.file is None:
            stored = _digest(self.source)
        else:
            stored = self._current().get(user)
        # an unknown user costs the same comparison, so timing does not say which names exist
        same = hmac.compare_digest(_digest(password), stored if stored is not None else _digest("\0unknown"))
        return same and stored is not None


class LoginRecord:
    """Ended logins and recent wrong passwords, in a small SQLite file shared by the server's processes; `clock`
    says the time in seconds (`time.time`)."""

    def __init__(self, path: Path, clock=time.time):
        self.path, self.clock = Path(path), clock
        self._conns: dict[int, sqlite3.Connection] = {}

    def _db(self) -> sqlite3.Connection:
        # one connection per process: `--num-procs` forks the server, and a connection must not cross a fork
        conn = self._conns.get(os.getpid())
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE IF NOT EXISTS ended (login TEXT PRIMARY KEY, until REAL NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS wrong (who TEXT PRIMARY KEY, count INTEGER NOT NULL, "
                         "first REAL NOT NULL, until REAL NOT NULL)")
            self._conns[os.getpid()] = conn
        return conn

    def end(self, login: str, lifetime_s: float) -> None:
        """Record that the login `login` (a login's random id) was ended: it is refused until it would expire."""
        now = self.clock()
        db = self._db()
        db.execute("DELETE FROM ended WHERE until < ?", (now,))
        db.execute("INSERT OR REPLACE INTO ended VALUES (?, ?)", (login, now + lifetime_s))

    def ended(self, login: str) -> bool:
        """Whether the login `login` was ended by a logout."""
        return self._db().execute("SELECT 1 FROM ended WHERE login = ?", (login,)).fetchone() is not None

    def locked_for(self, *who: str) -> float:
        """Seconds until logins for any of `who` (`user:NAME`, `address:IP`) are allowed again; 0 when they are."""
        now, marks = self.clock(), ",".join("?" * len(who))
        row = self._db().execute(f"SELECT MAX(until) FROM wrong WHERE who IN ({marks})", who).fetchone()
        return max(0.0, (row[0] or 0.0) - now)

    def wrong(self, who: str, allowed: int) -> None:
        """Count a wrong password for `who`; past `allowed` within WINDOW_S, its logins are refused for LOCKED_S."""
        now = self.clock()
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM wrong WHERE first < ? AND until < ?", (now - WINDOW_S, now))
            row = db.execute("SELECT count FROM wrong WHERE who = ?", (who,)).fetchone()
            count = (row[0] if row else 0) + 1
            until = now + LOCKED_S if count >= allowed else 0.0
            if row:
                db.execute("UPDATE wrong SET count = ?, until = ? WHERE who = ?", (count, until, who))
            else:
                db.execute("INSERT INTO wrong VALUES (?, ?, ?, ?)", (who, count, now, until))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def forget(self, who: str) -> None:
        """A right password: `who`'s count of wrong ones starts again."""
        self._db().execute("DELETE FROM wrong WHERE who = ?", (who,))
