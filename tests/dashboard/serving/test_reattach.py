"""Which Explorer a reloaded page takes back (`dashboard/serving/reattach.py`): only one showing the link's run, for the
same
signed-in user, whose page has gone or is this very page reloading; never a closed one, never another user's."""
from types import SimpleNamespace

import pytest

from invlab.dashboard.serving import reattach


class Page:
    """A served page's Bokeh session as `invlab.dashboard.serving.closing.connected` reads it."""

    def __init__(self, connections: int):
        self.session_context = SimpleNamespace(_session=SimpleNamespace(destroyed=False, connection_count=connections))


def explorer(run_id, user=None, connections=0, closed=False):
    return SimpleNamespace(user=user, session=SimpleNamespace(run_id=run_id), lifecycle=SimpleNamespace(closed=closed),
                           display=SimpleNamespace(doc=Page(connections)))


@pytest.fixture
def served(monkeypatch):
    pages = []
    monkeypatch.setattr(reattach, "_served", pages)
    return pages


def test_a_page_whose_tab_has_gone_is_taken_back_by_its_user_only(served):
    gone, other_run = explorer(7, user="ana"), explorer(8, user="ana")
    served += [other_run, gone]
    assert reattach.orphan_showing(7, "ana") is gone
    assert reattach.orphan_showing(7, "bo") is None  # another user's page (or a cookie naming it) gets nothing
    assert reattach.orphan_showing(7, None) is None
    assert reattach.orphan_showing(9, "ana") is None


def test_an_open_tab_keeps_its_run_unless_this_is_it_reloading(served):
    open_tab = explorer(7, connections=1)
    served.append(open_tab)
    assert reattach.orphan_showing(7, None) is None  # a second tab opens the run from the store instead
    assert reattach.orphan_showing(7, None, reloading=True) is open_tab
    served[0] = explorer(7, closed=True)
    assert reattach.orphan_showing(7, None, reloading=True) is None  # a closed page's run is not taken back


def test_a_server_without_logins_matches_no_user_with_an_empty_one(served):
    served.append(explorer(3, user=""))
    assert reattach.orphan_showing(3, None) is served[0]
