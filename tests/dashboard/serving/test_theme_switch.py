"""The theme switch's hand-over of a page's Explorer to its reload: once, to the same user, and closed if unclaimed."""
from invlab.dashboard.serving import theme as theme_switch


class FakeExplorer:
    def __init__(self, user=None):
        self.user, self.closed = user, False

    def close(self, wait=True):
        self.closed = True


def test_a_parked_explorer_is_claimed_once_and_only_by_its_user():
    explorer = FakeExplorer(user="ada")
    token = theme_switch.park(explorer)
    assert theme_switch.is_parked(explorer)
    assert theme_switch.claim(token, "eve") is None  # another user's link
    assert theme_switch.claim("not-a-token", "ada") is None
    assert theme_switch.claim(None) is None
    assert theme_switch.claim(token, "ada") is explorer
    assert not theme_switch.is_parked(explorer)
    assert theme_switch.claim(token, "ada") is None  # used


def test_an_unclaimed_explorer_is_closed(monkeypatch):
    monkeypatch.setattr(theme_switch, "HANDOFF_SECONDS", 0.05)
    explorer = FakeExplorer()
    theme_switch.park(explorer)
    import time
    deadline = time.time() + 10
    while not explorer.closed and time.time() < deadline:
        time.sleep(0.02)
    assert explorer.closed and not theme_switch.is_parked(explorer)

