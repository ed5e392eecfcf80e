"""Lesson 6, "Which symmetry does this data have?": its card says how long the Discover study takes, the README's
line about the lesson says the same, and the ranking the page shows puts the verdict's candidate first and marks it.

The ranking test trains a real (small) discover study: a target symmetric under both swapping and flipping the signs
of its inputs, where stage 2 trains the pair. On a laptop the pair can come out within the seeds' spread of its
first part; the test sets the pair's stored ELBOs so (its first part's ELBO plus a third of the spread), and the
verdict then names the first part alone. The table must agree: the first part first, marked as the verdict, the pair
right under it, and a note saying why."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from invlab.dashboard.compare.discover_ranking import ranking_frame
from invlab.dashboard.lessons.cards import card_html
from invlab.dashboard.lessons.catalogue import get_lesson
from invlab.sweeps.discover import plan_candidates, run_candidates
from invlab.sweeps.discover_html import table_rows
from invlab.sweeps.discover_report import CandidateResult, discover_report, mean_sd
from invlab.train import RunStore
from tests.helpers.even_table import write_even_csv

ROOT = Path(__file__).resolve().parents[2]


def test_the_discover_cards_time_is_one_figure_the_readme_repeats():
    lesson = get_lesson("discover")
    took = lesson.takes  # e.g. "about two minutes on a two-core laptop busy with other work"
    assert re.search(r"\babout \w+( to \w+)? minutes?\b", took), took
    card = " ".join(re.sub(r"<[^>]+>", " ", card_html(lesson)).split())
    assert took in card and "six minutes" not in card, card
    readme = " ".join((ROOT / "README.md").read_text().split())
    sentence = next(s for s in readme.split(". ") if "Which symmetry does this data have?" in s and "walks it" in s)
    assert took in sentence, sentence  # the README's line about the lesson gives the card's figure


@pytest.fixture(scope="module")
def within_noise_pair(tmp_path_factory):
    """A real discover study whose pair (stage 2) is set within the seeds' spread above its first part."""
    tmp = tmp_path_factory.mktemp("discover")
    path = write_even_csv(tmp, 50)
    store = RunStore(tmp / "runs.sqlite")
    plan = plan_candidates({"dataset": f"csv:{path}"}, seeds=2, steps=100, orbits=["permutations", "sign_flips"],
                           model_config={"num_inducing": 12}, train={"batch_size": 0, "learning_rate": 0.03})
    sweep_id = run_candidates(plan, store, serial=True)
    report = discover_report(store, sweep_id)
    pair = next(c for c in report.ranking if "+" in c.candidate)
    first = report.row(pair.candidate.split("+")[0])
    for run_id, seed in zip(sorted(pair.run_ids), sorted(first.elbos)):  # within noise above the first part
        store.runs.update(run_id, full_elbo=first.elbos[seed] + first.elbo_sd / 3)
    store.flush()
    yield store, sweep_id, first.candidate, pair.candidate
    store.close()


def test_the_table_puts_the_verdicts_candidate_first_and_marks_it(within_noise_pair):
    store, sweep_id, first, pair = within_noise_pair
    report = discover_report(store, sweep_id)
    assert report.row(pair).elbo_mean > report.row(first).elbo_mean  # the pair's mean is higher, within noise
    assert report.verdict.startswith(f"invariant under {first} (log BF"), report.verdict
    names = [c.candidate for c in report.ranking]
    assert names[:2] == [first, pair], names
    frame = ranking_frame(report, None, sweep_id, running=False)  # what the page's table shows
    assert list(frame["candidate"])[:2] == [first, pair]
    assert frame["#"].iloc[0] == "1 ✓" and "✓" not in "".join(frame["#"].iloc[1:]), list(frame["#"])
    _, rows = table_rows(report)  # the terminal's and the HTML report's table
    assert rows[0][:2] == ["1 ✓", first]
    why = [n for n in report.notes if n.startswith(f"{pair} ranks below {first}")]
    assert why and "within noise the simpler group wins" in why[0], report.notes
    assert "✓ marks the verdict's candidate" in " ".join(report.notes)


def row(name, elbos):
    c = CandidateResult(name, elbos=dict(enumerate(elbos)), finished=len(elbos))
    c.elbo_mean, c.elbo_sd = mean_sd(elbos)
    return c


def test_a_candidate_within_noise_above_none_ranks_below_none_as_the_verdict_says():
    from invlab.sweeps.discover_report import verdict
    from invlab.sweeps.discover_verdict import preferred_order

    none, flips, shifts = row("none", [-100.0, -101.0]), row("flips", [-99.8, -101.2]), row("shifts", [-300.0, -302.0])
    for c in (flips, shifts):
        c.log_bf, c.log_bf_sd = mean_sd([c.elbos[s] - none.elbos[s] for s in c.elbos])
    by_elbo = [flips, none, shifts]
    assert verdict(by_elbo).startswith("no invariance beats none beyond noise (best: flips")
    order, moved = preferred_order(by_elbo)
    assert [c.candidate for c in order] == ["none", "flips", "shifts"] and moved == {"flips": "none"}
