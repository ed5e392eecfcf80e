"""The data's own names on the page, without a browser: each ARD lengthscale by its input column (a summary when
there are many), an image folder's classes by their folder names in the patch view, a Discover group of columns by
the columns' names (verdict, ranking, terminal) and chosen by name in the form, and every "mean ± sd" with the sd to
two significant figures and the mean to the same decimal place. Names a user supplies are shown as text, never HTML.
"""
from __future__ import annotations

import contextlib
import functools
import io
import types

import numpy as np
import pytest
import torch

from invlab.dashboard.views.maps import render_image_grid
from invlab.dashboard.views.tables import scalars_html
from invlab.train import RunConfig, Trainer
from tests.helpers.panes import pane_text

MARKED = "<b>bmi</b>"  # a column name with markup: shown as text


def table_csv(path, columns, target=None, rows=48, seed=0):
    """A CSV with input `columns` and target column `y` (`target(X)` of the inputs, else noise)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(rows, len(columns)))
    y = target(X) if target is not None else rng.normal(size=rows)
    lines = [",".join(list(columns) + ["y"])] + [",".join(f"{v:.5f}" for v in row) for row in np.column_stack([X, y])]
    path.write_text("\n".join(lines) + "\n")
    return path


def hyperparameters(dataset: str, **data) -> tuple[dict, str]:
    """The hyper-parameter view of an SVGP with ARD built on `dataset`: its rows and the table the page shows."""
    trainer = Trainer(RunConfig(model="svgp", data={"dataset": dataset, **data},
                                model_config={"num_inducing": 6, "ard": True}, train={"batch_size": 20}))
    view = trainer.model.diagnostics(trainer.report.diagnostic_data(), only={"hyperparameters"})["hyperparameters"]
    return view.values, scalars_html(view)


def test_each_ard_lengthscale_is_shown_by_its_column_name(tmp_path):
    path = table_csv(tmp_path / "people.csv", ["age", "height", MARKED])
    values, html = hyperparameters(f"csv:{path}")
    for name in ("age", "height", "&lt;b&gt;bmi&lt;/b&gt;"):
        assert f"lengthscale ({name})" in html, html
    assert "mean of" not in html and "<b>bmi" not in html
    assert html.count("lengthscale (") == 3


def test_many_inputs_keep_a_summary_naming_the_shortest_and_longest_lengthscale():
    values, html = hyperparameters("breast_cancer", subset=60)
    assert "lengthscale (mean of 30)" in html and "lengthscale (shortest: " in html and "lengthscale (longest: " in html
    assert html.count("lengthscale (") == 3  # not 30 rows
    shortest = next(k for k in values if "shortest" in k)
    assert values[shortest] == pytest.approx(min(v for k, v in values.items() if "lengthscale" in k))
    _, pixels = hyperparameters("digits", subset=40)  # 64 unnamed pixels: the summary, by pixel
    assert "lengthscale (mean of 64)" in pixels and pixels.count("lengthscale (") == 3


@functools.cache
def folder_of_pictures(root: str, classes: tuple[str, ...]):
    """Class folders `classes` of 8×8 grey noise images under `root`."""
    from pathlib import Path

    from PIL import Image

    rng = np.random.default_rng(0)
    for name in classes:
        (Path(root) / name).mkdir(parents=True, exist_ok=True)
        for i in range(8):
            Image.fromarray((rng.random((8, 8)) * 255).astype("uint8")).save(Path(root) / name / f"{i}.png")
    return f"images:{root}"


def patch_view(dataset: str):
    trainer = Trainer(RunConfig(model="conv-invariant", data={"dataset": dataset},
                                model_config={"num_inducing": 6}, train={"batch_size": 12}))
    torch.manual_seed(0)
    return trainer.model.diagnostics(trainer.report.diagnostic_data(), only={"inducing_patches"})["inducing_patches"]


def test_the_patch_view_names_an_image_folders_classes_by_their_folders(tmp_path):
    view = patch_view(folder_of_pictures(str(tmp_path / "three"), ("cats", "dogs", "<em>emus")))
    ticks = [label for _, label in render_image_grid(view).opts.get().kwargs["yticks"]]
    assert ticks == ["<em>emus", "cats", "dogs"]  # the folders in name order; Bokeh draws tick labels as text
    two = patch_view(folder_of_pictures(str(tmp_path / "two"), ("cats", "dogs")))
    assert "favour dogs" in two.description and "class 1" not in two.description, two.description


def test_the_plane_of_a_two_class_table_says_the_probability_of_its_named_class(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    lines = ["width,length,kind"] + [f"{a:.4f},{b:.4f},{'dog' if a > 0 else 'cat'}" for a, b in X]
    (tmp_path / "pets.csv").write_text("\n".join(lines) + "\n")
    trainer = Trainer(RunConfig(model="svgp", data={"dataset": f"csv:{tmp_path / 'pets.csv'}"},
                                model_config={"num_inducing": 6}, train={"batch_size": 20}))
    view = trainer.model.diagnostics(trainer.report.diagnostic_data(), only={"posterior"})["posterior"]
    assert view.title == "P(dog)"


# -- Discover --------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def discovered(tmp_path_factory):
    """`invlab discover --serial` on a CSV of columns age, height, weight with a group on age and height: the
    terminal's output and the stored report."""
    from invlab.cli import main
    from invlab.sweeps.discover_report import discover_report
    from invlab.train import RunStore

    root = tmp_path_factory.mktemp("discover")
    path = table_csv(root / "people.csv", ["age", "height", "weight"], lambda X: X[:, 0] * X[:, 1] + X[:, 2])
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INVLAB_DATA", str(root))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["discover", "--dataset", f"csv:{path}", "--orbit", "permutations:0,1", "--seeds", "2",
                         "--steps", "10", "--num-inducing", "6", "--batch-size", "0", "--serial", "--no-combine"])
        store = RunStore(root / "runs.sqlite")
        report = discover_report(store, store.sweeps.list()[0].id)
        yield code, out.getvalue(), err.getvalue(), report, store
        store.close()


def test_the_terminal_names_a_group_by_its_columns(discovered):
    code, out, err, report, _ = discovered
    assert code == 0, err
    assert "permutations: age, height" in out and "permutations:0,1" not in out, out
    assert "permutations: age, height seed 0" in err  # the progress lines too
    assert "permutations: age, height" in report.verdict or "permutations: age, height" in " ".join(report.notes)


def test_the_pages_ranking_and_verdict_name_a_group_by_its_columns(discovered):
    from invlab.dashboard.compare.discover import DiscoverStudy

    _, _, _, report, store = discovered
    from invlab.dashboard.compare.context import CompareContext
    from invlab.dashboard.state.settings import RunSettings

    opened = []
    context = CompareContext(RunSettings(), store)
    context.param.watch(lambda *_: opened.append(context.run_to_open), "open_run")
    study = DiscoverStudy(context)
    assert study.show(report.sweep_id)
    assert "permutations: age, height" in list(study.table.table.value["candidate"])
    shown = pane_text(study.table.verdict)
    assert "permutations:0,1" not in shown and "permutations:0,1" not in str(study.table.table.value)
    row = list(study.table.table.value["candidate"]).index("permutations: age, height")
    study.table.table.selection = [row]  # a click on the group's row opens its run
    assert opened == [report.row("permutations:0,1").run_ids[0]]


def test_the_form_names_a_group_of_columns_and_refuses_one_column(tmp_path):
    from invlab.dashboard.compare.discover_form import DiscoverForm

    path = table_csv(tmp_path / "people.csv", ["age", "height", "weight"])
    settings = types.SimpleNamespace(run_config=lambda: RunConfig(data={"dataset": f"csv:{path}"}),
                                     data=types.SimpleNamespace(dataset=f"csv:{path}"))
    form = DiscoverForm(types.SimpleNamespace(settings=settings, limits=None))
    form.show_candidates(form.plan())
    assert list(form.group.options) == ["age", "height", "weight"] and form.group.visible
    pick = lambda *names: [form.group.options[n] for n in names]  # noqa: E731 — the box's values for these labels
    form.group.value = pick("weight")
    with pytest.raises(ValueError, match="at least 2 columns; only weight is chosen"):
        form.orbits()
    form.group.value = pick("weight", "age")
    assert form.orbits() == [*form.candidates.value, "permutations:0,2"]
    plan = form.plan(orbits=form.orbits())
    assert "permutations: age, weight" in [plan.label(n) for n in plan.names]
    digits = types.SimpleNamespace(run_config=lambda: RunConfig(data={"dataset": "digits", "subset": 40}),
                                   data=types.SimpleNamespace(dataset="digits"))
    unnamed = DiscoverForm(types.SimpleNamespace(settings=digits, limits=None))
    unnamed.show_candidates(unnamed.plan())
    assert not unnamed.group.visible  # images name no columns
    marked = DiscoverForm(types.SimpleNamespace(settings=types.SimpleNamespace(
        run_config=lambda: RunConfig(data={"dataset": f"csv:{table_csv(tmp_path / 'm.csv', ['a', 'b', MARKED])}"})),
        limits=None))
    marked.show_candidates(marked.plan())
    assert list(marked.group.options) == ["a", "b", "&lt;b&gt;bmi&lt;/b&gt;"]  # the box shows its labels as HTML


# -- mean ± sd -------------------------------------------------------------------------------------------------------
def test_mean_and_sd_are_shown_with_one_precision():
    from invlab.sweeps.discover_html import table_rows
    from invlab.sweeps.discover_report import CandidateResult, DiscoverReport, mean_sd, verdict

    def row(name, elbos):
        c = CandidateResult(name, elbos=dict(enumerate(elbos)), finished=len(elbos))
        c.elbo_mean, c.elbo_sd = mean_sd(elbos)
        return c

    none = row("none", [-300.0, -300.0])
    flips = row("flips", [-282.0 + 0.4603, -282.0 - 0.4603])  # log BF 18 ± 0.651
    flips.log_bf, flips.log_bf_sd = 18.0, 0.651
    assert "log BF 18.00 ± 0.65 over none" in verdict([flips, none])
    flips.log_bf, flips.log_bf_sd = 266.0, 5.57
    assert "log BF 266.0 ± 5.6 over none" in verdict([flips, none])
    report = DiscoverReport(1, "d", "finished", [flips, none], {}, [], "", False, 4, 4)
    _, rows = table_rows(report)
    assert rows[0][3] == "-282.00 ± 0.65" and rows[0][4] == "266.0 ± 5.6"
