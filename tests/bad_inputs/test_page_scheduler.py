"""Who chooses the Dask scheduler a served Compare page's runs go to.

The server connects to a scheduler address as a Dask client and unpickles what its workers send back, so naming
one runs code in the server's process (and a mere attempt says whether a port is open). On a server with logins
only its admins (`invlab serve --admin USER`) may name one; without logins, a page may only where the server was
started with `--allow-page-scheduler`; otherwise the page's runs go to the server's own choice (`--scheduler
ADDRESS`, or its own cluster). A refused address is said beside the field and never contacted: these tests type one
where something listens and count the connections it receives (and spy on Dask's client).

Each page here is built as the server builds it: an `Explorer` with the server's limits and the logged-in user.
"""
import socket
import threading
import time

import pytest

from invlab.dashboard import Explorer
from invlab.dashboard.serving.limits import ServerLimits
from invlab.train import RunStore

TIMEOUT = 1.0  # the scheduler timeout here: the listener never answers as Dask


class Listener:
    """A real listening socket on 127.0.0.1 that accepts connections, counts them and never says a word."""

    def __init__(self):
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(16)
        self.server.settimeout(0.1)
        self.address = f"tcp://127.0.0.1:{self.server.getsockname()[1]}"
        self.accepted: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted.append(conn)

    def close(self):
        self.stop.set()
        self.thread.join(2)
        for conn in self.accepted:
            conn.close()
        self.server.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def clients(monkeypatch):
    """Every address a Dask `Client` is opened on (the call goes on as usual)."""
    import distributed

    import invlab.sweeps.scheduler as scheduler_module

    monkeypatch.setattr(scheduler_module, "SCHEDULER_TIMEOUT", TIMEOUT)
    seen, real = [], distributed.Client

    class Spy(real):
        def __init__(self, address=None, *args, **kwargs):
            seen.append(address)
            super().__init__(address, *args, **kwargs)

    monkeypatch.setattr(distributed, "Client", Spy)
    return seen


@pytest.fixture
def page_for(tmp_path):
    """page_for(limits, user, admin): the Compare page of a served page for that user."""
    store = RunStore(tmp_path / "runs.sqlite")
    built = []

    def build(limits, user=None, admin=False):
        explorer = Explorer(store=store, limits=limits, user=user, admin=admin)
        explorer.__panel__()
        explorer.compare.activate()
        built.append(explorer)
        return explorer.compare

    yield build
    for explorer in built:
        explorer.close()
    store.close()


def wait_for(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def press_run_study(page):
    """▶ Run study (the quick symmetric-2d study), then wait for its work to end."""
    page.form.study_select.value = "symmetric-2d-swap"
    page.form.quick.value = True
    page.form.study_button.clicks += 1
    runner = page.following.runner
    if runner is not None:
        runner.thread.join(60)
        page.tick()


def assert_refused(page, listener, clients, words):
    """The page refused `listener`'s address: it says so beside the field and under the form, nothing started, and
    the address was never contacted."""
    page.context.scheduler = listener.address
    press_run_study(page)
    note = page.form.scheduler_note_text
    assert words in note and "not contacted" in note, note
    assert page.form.form_error_text == note
    assert page.following.runner is None and page.state == "idle"
    study = page.discover
    study.refresh()
    study.start()
    assert study.form.error_text == note and not study.running()
    time.sleep(0.3)  # (a connection from a thread started by mistake would have arrived)
    assert listener.accepted == [] and listener.address not in clients
    assert page.store.sweeps.list() == []  # nothing stored


def assert_contacted(page, listener):
    """The page's address was used: the sweep's check reached it (and, as it is no Dask scheduler, the sweep says
    so)."""
    page.context.scheduler = listener.address
    press_run_study(page)
    assert wait_for(lambda: listener.accepted), page.message
    assert page.state == "failed" and listener.address in page.message, page.message
    assert page.form.scheduler_note_text == ""


def test_a_student_on_a_server_with_logins_cannot_choose_the_scheduler(page_for, listener, clients):
    page = page_for(ServerLimits(), user="student")
    assert page.form.scheduler_input.disabled  # shown, read-only
    assert_refused(page, listener, clients, "only the person running it")


def test_an_admin_on_a_server_with_logins_may_choose_the_scheduler(page_for, listener, clients):
    page = page_for(ServerLimits(admins=("teacher",)), user="teacher", admin=True)
    assert not page.form.scheduler_input.disabled
    assert_contacted(page, listener)


def test_a_server_without_logins_refuses_a_pages_scheduler_unless_started_to_allow_it(page_for, listener, clients):
    page = page_for(ServerLimits())
    assert page.form.scheduler_input.disabled
    assert_refused(page, listener, clients, "--allow-page-scheduler")


def test_a_server_without_logins_started_with_allow_page_scheduler_lets_a_page_choose(page_for, listener, clients):
    page = page_for(ServerLimits(page_scheduler=True))
    assert not page.form.scheduler_input.disabled
    assert_contacted(page, listener)


def test_a_server_given_a_scheduler_sends_every_pages_runs_there_and_refuses_another(page_for, listener, clients):
    other = Listener()
    try:
        page = page_for(ServerLimits(scheduler=other.address))
        assert page.context.scheduler == other.address and page.form.scheduler_input.disabled  # the server's, read-only
        assert_refused(page, listener, clients, "--allow-page-scheduler")
        page.context.scheduler = other.address  # the server's own choice: the runs go there
        page.form.show_error("")
        press_run_study(page)
        assert wait_for(lambda: other.accepted) and other.address in page.message, page.message
        assert listener.accepted == []
    finally:
        other.close()


def test_a_student_cannot_reach_another_scheduler_on_a_server_given_one(page_for, listener, clients):
    page = page_for(ServerLimits(scheduler="tcp://127.0.0.1:9"), user="student")
    assert page.context.scheduler == "tcp://127.0.0.1:9" and page.form.scheduler_input.disabled
    assert_refused(page, listener, clients, "only the person running it")


def test_a_notebooks_page_chooses_its_own_scheduler(page_for, listener, clients):
    """A notebook (no server limits): the person running the process types the address."""
    page = page_for(None)
    assert not page.form.scheduler_input.disabled
    assert_contacted(page, listener)


def test_invlab_serve_hands_its_scheduler_flags_to_the_pages(world):
    from invlab.cli.serve import serve_command

    _, env = serve_command(["--scheduler", "tcp://10.0.0.5:8786"])
    limits = ServerLimits.from_env(env)
    assert limits.scheduler == "tcp://10.0.0.5:8786" and not limits.page_scheduler
    _, env = serve_command(["--allow-page-scheduler"])
    limits = ServerLimits.from_env(env)
    assert limits.page_scheduler and limits.scheduler == ""
    assert not ServerLimits.from_env({}).page_scheduler  # the default: the server chooses


def test_invlab_serve_refuses_a_page_scheduler_on_a_server_with_logins_and_a_scheduler_that_is_no_address(world,
                                                                                                         capsys):
    from invlab.cli import main

    users = world / "users.json"
    users.write_text('{"teacher": "a long password"}')
    code = main(["serve", "--allow-page-scheduler", "--basic-auth", str(users), "--cookie-secret", "s" * 32])
    err = capsys.readouterr().err
    assert code == 2 and "--allow-page-scheduler" in err and "--admin" in err and "Traceback" not in err, err
    code = main(["serve", "--scheduler", "tcp://:8786"])
    err = capsys.readouterr().err
    assert code == 2 and "--scheduler" in err and "tcp://host:8786" in err, err
