"""Which Explorer a reloaded page takes back (`dashboard/serving/reattach.py`): only one showing the link's run, for the
same signed-in user, whose page has gone or is this very page reloading (it hands back its own key); never a closed
one, never another user's, never a live page to a request without its key."""
import weakref
from types import SimpleNamespace

import pytest

from invlab.dashboard.serving import reattach


class Page:
    """A served page's Bokeh session as `invlab.dashboard.serving.closing.connected` reads it."""

    def __init__(self, connections: int):
        self.session_context = SimpleNamespace(_session=SimpleNamespace(destroyed=False, connection_count=connections))


class Served:
    """A served Explorer as `reattach` reads it (hashable and weakly referenced, as an Explorer is)."""

    def __init__(self, run_id, user=None, connections=0, closed=False):
        self.user, self.session = user, SimpleNamespace(opened=SimpleNamespace(run_id=run_id))
        self.lifecycle, self.display = SimpleNamespace(closed=closed), SimpleNamespace(doc=Page(connections))


explorer = Served


@pytest.fixture
def served(monkeypatch):
    pages = []
    monkeypatch.setattr(reattach, "_served", pages)
    monkeypatch.setattr(reattach, "_keys", weakref.WeakKeyDictionary())
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
    reattach._keys[open_tab] = "its-own-key"  # given to its page as it was built (`keyed`)
    assert reattach.orphan_showing(7, None, key="its-own-key") is open_tab
    assert reattach.orphan_showing(7, None, key="another-browsers-guess") is None
    assert reattach.orphan_showing(7, None, key="") is None
    served[0] = explorer(7, closed=True)
    reattach._keys[served[0]] = "its-own-key"
    assert reattach.orphan_showing(7, None, key="its-own-key") is None  # a closed page's run is not taken back


def test_a_server_without_logins_matches_no_user_with_an_empty_one(served):
    served.append(explorer(3, user=""))
    assert reattach.orphan_showing(3, None) is served[0]
