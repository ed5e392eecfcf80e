"""Links and page fields that are refused in words: run and sweep ids, subsets, numbers, priors, themes."""


import pytest

from tests.bad_inputs.worlds import run_cli, setup_checkpoint_plain_pickle


def test_a_run_link_that_is_not_a_number_is_refused_on_the_page(tmp_path):
    from invlab.dashboard import Explorer
    from invlab.train import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        explorer = Explorer(store=store)
        try:
            explorer.runs.open_link("1; DROP TABLE runs")
            assert explorer.notice == ("run='1; DROP TABLE runs' refused: a stored run is named by its number (Runs → "
                                       "Stored runs lists them)")
            assert explorer.session.state != "building"  # nothing was opened
        finally:
            explorer.close()


def test_a_subset_beyond_the_data_is_refused_in_its_field():
    from invlab.dashboard import Explorer

    explorer = Explorer(store=None)
    try:
        explorer.settings.data.subset = 200
        explorer.controls()
        subset = explorer.page.data_group.controls["subset"]
        assert not subset.apply(99999999)
        assert explorer.settings.data.subset == 200 and "99999999" not in explorer.to_query()
        assert subset.error.startswith("Subset can't be 99999999: subset=99999999 but 'digits' has only ")
        assert subset.error.endswith("(0 keeps all). Kept 200.")
    finally:
        explorer.close()


def test_a_garbage_checkpoint_is_unreadable_without_torchs_advice(tmp_path):
    from invlab.train.checkpoint import CheckpointError, load_checkpoint

    path = tmp_path / "garbage.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot be read") as info:
        load_checkpoint(path)
    assert "weights_only" not in str(info.value) and "\n" not in str(info.value)


def test_a_plain_pickle_checkpoint_is_refused_without_a_torch_warning(world, capsys):
    """torch warns about the pickle protocol of a file it did not write; the refusal is the only thing said."""
    import warnings

    setup_checkpoint_plain_pickle(world)
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run_cli(["train", "--resume", "1", "--steps", "3", "--quiet"], capsys)
    assert code == 1 and "pickle" in err and "Traceback" not in err
    assert not [w for w in caught if "pickle" in str(w.message)], [str(w.message) for w in caught]


def test_a_link_to_a_sweep_id_beyond_sqlite_is_refused_in_words(tmp_path):
    """`?page=compare&sweep=99999999999999999999999` (Panel parses it to an int) is refused like any bad id."""
    from invlab.dashboard.compare import ComparePage
    from invlab.train import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(store=store)
        for raw in (99999999999999999999999, "99999999999999999999999", 0, -4):
            refused = page.read_query({"page": "compare", "sweep": raw})
            assert len(refused) == 1 and refused[0].startswith(f"sweep={str(raw)!r} refused"), refused
            assert "1 to 9223372036854775807" in refused[0] and "Overflow" not in refused[0]
        long = "7" * 400
        refused = page.read_query({"sweep": long})
        assert len(refused[0]) < 300 and "…" in refused[0]


def test_a_discover_study_that_cannot_start_says_why_beside_its_form(tmp_path):
    """The Compare page's Discover study: nothing ticked, data that cannot be read, a scheduler nobody answers at; each
    is said under its form, nothing is stored, and ticking again on readable data lists the candidates."""
    from invlab.dashboard.compare import ComparePage
    from invlab.train import RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(store=store, data_choices=lambda: ["digits"])
        study = page.discover
        study.refresh()
        assert "rotation" in study.form.candidates.options and not study.form.error.visible
        study.form.candidates.value = []
        study.start()
        assert study.form.error.visible and "tick at least one candidate" in study.form.error_text
        missing = tmp_path / "absent.csv"
        study.form.data_box.options = ["digits", f"csv:{missing}"]
        study.form.data_box.value = f"csv:{missing}"
        assert study.form.error.visible and "absent.csv" in study.form.error_text and not study.form.candidates.options
        study.start()
        assert study.form.error.visible and not study.running()
        study.form.data_box.value = "digits"  # readable again: the candidates are listed, ticked
        assert not study.form.error.visible and study.form.candidates.value == list(study.form.candidates.options)
        page.context.scheduler = "tcp://127.0.0.1:9"
        study.start()
        assert "no Dask scheduler answered at tcp://127.0.0.1:9" in study.form.error_text and not study.running()
        assert store.sweeps.list() == []  # nothing stored by any of them


def test_a_link_to_a_discover_study_that_is_not_one_is_refused_in_words(tmp_path):
    """`?page=compare&discover=abc`, an id nothing has, and a sweep that is not a Discover study."""
    from invlab.dashboard.compare import ComparePage
    from invlab.sweeps import SweepSpec
    from invlab.train import RunConfig, RunStore

    with RunStore(tmp_path / "runs.sqlite") as store:
        page = ComparePage(store=store)
        assert page.read_query({"discover": "abc"})[0].startswith("discover='abc' refused")
        assert "no sweep with id 9999" in page.read_query({"discover": "9999"})[0]
        spec = SweepSpec(name="steps", base=RunConfig(), vary={"train.steps": [1, 2]}, seeds=[0])
        sweep_id = store.sweeps.create(spec.name, spec.to_json(), 2)
        refused = page.read_query({"discover": str(sweep_id)})
        assert refused and f"sweep {sweep_id} (steps) is not a discover run" in refused[0], refused
        assert page.discover.sweep_id is None and "discover" not in page.query()


def test_a_huge_number_in_a_link_is_refused_as_written():
    """`?train.steps=1e308` is refused naming the value as the link gave it, never as a 309-digit integer."""
    from panel.util import parse_query

    from invlab.dashboard.state.settings import RunSettings

    settings = RunSettings()
    problems = settings.apply_query(parse_query("?train.steps=1e308&train.log_every=" + "9" * 400))
    assert len(problems) == 2, problems
    steps, subset = sorted(problems, key=lambda p: not p.startswith("train.steps"))
    assert steps.startswith("train.steps=1e+308 refused") and "000000000" not in steps, steps
    assert subset.startswith("train.log_every=999") and "…" in subset and len(subset) < 300, subset
    assert settings.train.steps == RunSettings().train.steps  # left as it was


def test_bad_prior_values_in_a_link_are_refused_as_written():
    """`?prior.delta=abc`, `prior.num_layers=99`, an unknown `prior.<name>` and markup are refused one by one, the
    good values kept; nothing is drawn from the refused ones."""
    from panel.util import parse_query

    from invlab.dashboard.prior.page import apply_prior_query
    from invlab.models.dkp import PriorExplorer

    explorer = PriorExplorer()
    query = parse_query("?prior.delta=abc&prior.num_layers=99&prior.alpha=2&prior.%3Cb%3Ex=1&prior.seed=" + "9" * 400)
    problems = apply_prior_query(explorer, {k.partition(".")[2]: v for k, v in query.items()})
    assert len(problems) == 4, problems
    text = " | ".join(problems)
    assert "prior.delta='abc' refused" in text and "prior.num_layers=99 refused" in text, text
    assert "'prior.<b>x': not a prior setting" in text and all(len(p) < 300 for p in problems), text
    assert explorer.delta == PriorExplorer().delta and explorer.num_layers == 2 and explorer.alpha == 2.0




def test_a_theme_change_link_whose_page_has_gone_says_so():
    from invlab.dashboard.serving.theme import GONE, page_for

    class Fresh:
        notice = ""

    page = page_for("no-such-token", None, Fresh)
    assert isinstance(page, Fresh) and page.notice == GONE
    assert page_for("", None, Fresh).notice == ""  # no token: an ordinary new page, nothing to explain


def test_a_link_with_an_unknown_theme_says_so():
    """`?theme=purple` opened the default theme without a word; the notice now names it and the themes there are."""
    from panel.io.location import Location

    from invlab.dashboard import Explorer

    explorer = Explorer(store=False)
    try:
        explorer.read_location(Location(search="?theme=purple&train.learning_rate=0.02"))
        assert "theme: 'purple' is not one of default, dark" in explorer.notice
        assert explorer.train.learning_rate == 0.02  # the rest of the link still applies
        explorer.notice = ""
        explorer.read_location(Location(search="?theme=dark"))
        assert explorer.notice == ""
    finally:
        explorer.close()


def test_a_cookie_the_page_writes_never_chooses_who_owns_a_run(monkeypatch):
    """Panel's `pn.state.user` answers 'guest' for an unsigned `is_guest=1` cookie; the page's owner is read only from
    the `user` cookie the server signed (tests/browser/test_owners_browser.py does the same in two logged-in
    Chromium contexts)."""
    import panel as pn
    from tornado.web import create_signed_value

    from invlab.dashboard.serving.identity import IdentityError, page_owner

    secret = "s" * 32
    monkeypatch.setattr(pn.config, "cookie_secret", secret, raising=False)
    monkeypatch.setenv("PANEL_COOKIE_SECRET", secret)
    forged = {"is_guest": "1", "access_token": "x", "id_token": "x", "refresh_token": "x", "oauth_expiry": "1"}
    signed_bob = create_signed_value(secret, "user", "bob").decode()
    monkeypatch.setattr(pn.config, "basic_auth", "users.json")
    assert page_owner({**forged, "user": signed_bob}) == "bob"  # was: 'guest'
    for unsigned in ({**forged}, {**forged, "user": "alice"}, {"user": create_signed_value("other", "user", "alice")}):
        with pytest.raises(IdentityError, match="log in again at /login"):
            page_owner(unsigned)
    monkeypatch.setattr(pn.config, "basic_auth", None)  # no logins: no owners, whatever the browser sends
    assert page_owner({**forged, "user": signed_bob}) is None
