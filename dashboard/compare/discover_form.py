"""The Discover study's form: the data box (the Training page's data by default, or any data set the page may read),
the candidate invariances that apply to it (ticked by default, the others named with the reason), for a table with
named columns a group of columns to permute (a candidate of its own, 'permutations: age, height'), seeds and steps,
▶ Discover, what is wrong with the form (said under it), and the plan they make. The study (discover.py) runs the
plan and follows it."""
from __future__ import annotations

import panel as pn
import param

from invlab.dashboard.compare.data import data_words
from invlab.dashboard.safe_text import html_text, markdown_text
from invlab.sweeps.discover import NONE, plan_candidates
from invlab.sweeps.discover_labels import coordinates_of
from invlab.train import RunConfig

DEFAULT_SEEDS = 2  # the page's default (the command's is 3): two seeds give a spread and keep a class demo short
GROUP_ORBIT = "permutations"  # the group a few named columns can form on the page


class DiscoverForm(pn.viewable.Viewer):
    """The form of a Discover study: it reads the Training page's data settings (`context.settings`), offers the data
    sets `data_choices()` lists, refuses what the server's limits (`context.limits`) refuse, and raises `data_picked`
    when the user picks another data set in the box and `start` when ▶ Discover is pressed."""

    data_picked = param.Event(doc="The user picked another data set in the box.")
    start = param.Event(doc="▶ Discover: the study trains the ticked candidates.")

    def __init__(self, context, *, data_choices=None):
        super().__init__()
        self.settings = context.settings
        self.limits = context.limits  # a server's ServerLimits: data sets outside its folders or too large are refused
        self._choices = data_choices or (lambda: [])
        self._picked = False  # the user chose a data set here: it no longer follows the Training page's
        self._quiet = False  # the box is being set by `follow`, not by the user
        self.data_box = pn.widgets.Select(label="Data set", options=[], width=300)
        self.data_words = pn.pane.HTML("", width=300, margin=(0, 10), css_classes=["invlab-discover-data"])
        self.candidates = pn.widgets.CheckBoxGroup(label="Candidates", options=[], value=[], inline=True,
                                                   css_classes=["invlab-discover-candidates"])
        self.candidate_words = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        # option labels are the data's column names, escaped: Bokeh's MultiChoice shows its labels as HTML
        self.group = pn.widgets.MultiChoice(label="Permute only these columns (at least 2; empty: none)", options={},
                                            value=[], width=420, visible=False,
                                            css_classes=["invlab-discover-group"])
        self._columns: tuple[str, ...] = ()
        self.seeds = pn.widgets.IntInput(label="Seeds", value=DEFAULT_SEEDS, start=1, end=10, width=110)
        self.steps = pn.widgets.IntInput(label="Steps per run", value=300, start=10, end=20000, step=50, width=130)
        self.start_button = pn.widgets.Button(label="▶ Discover", color="success", width=130)
        self.start_button.on_click(lambda *_: self.param.trigger("start"))
        self.error = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width",
                                   css_classes=["invlab-discover-error"])
        self.error_text = ""  # what `error` says, as text (the pane holds it escaped)
        self.data_box.param.watch(self._on_data, "value")

    def show_error(self, text: str) -> None:
        """Say `text` under the form (empty: hide the message)."""
        self.error_text = text
        self.error.object = markdown_text(text)
        self.error.visible = bool(text)

    def data_config(self) -> dict:
        """The data the study fits: the Training page's data settings when the data box holds the Training page's
        data set; another data set with its own defaults (the Training page's rotation, subset or options may not
        apply to it)."""
        data = dict(self.settings.run_config().data)
        if self.data_box.value and self.data_box.value != data.get("dataset"):
            return {"dataset": self.data_box.value}
        return data

    def follow(self) -> None:
        """Hold the Training page's data set in the box (until the user chose one here), among the choices."""
        choices = list(self._choices())
        current = self.settings.data.dataset
        value = self.data_box.value if self._picked and self.data_box.value in choices else current
        if value not in choices:
            choices.insert(0, value)
        self._quiet = True
        try:
            self.data_box.options = choices
            self.data_box.value = value
        finally:
            self._quiet = False

    def _on_data(self, event) -> None:
        if self._quiet:
            return
        self._picked = True
        self.param.trigger("data_picked")

    def plan(self, orbits: list[str] | None = None):
        """The `DiscoverPlan` of the box's data with the form's seeds and steps (`orbits`: only these candidates);
        raises what the server's limits or the planning refuse (InvlabError, ValueError)."""
        data = self.data_config()
        self.data_words.object = html_text(data_words(data))
        if self.limits is not None:
            self.limits.check_dataset(str(data.get("dataset", "")))
            self.limits.check(RunConfig("invariant", dict(data), {}, {"steps": int(self.steps.value or 1)}))
        return plan_candidates(data, seeds=int(self.seeds.value or 1), steps=int(self.steps.value or 1),
                               orbits=orbits)

    def show_candidates(self, plan) -> None:
        """List, ticked, the candidates of `plan` (None: none, the data could not be planned) and say why the
        registered others do not apply."""
        if plan is None:
            self.candidates.param.update(options=[], value=[])
            self.candidate_words.object = ""
            self._show_group(None)
            return
        names = [name for name in plan.names if name != NONE]
        self.candidates.param.update(options=names, value=list(names))
        self._show_group(plan)
        skipped = "; ".join(f"{name}: {why}" for name, why in plan.skipped.items())
        self.candidate_words.object = html_text(
            f"none (no invariance) always trains: it is the baseline. For these {plan.kind} inputs of shape "
            f"{plan.input_shape}" + (f", these do not apply: {skipped}." if skipped else ", every registered "
                                     "candidate applies."))

    def _show_group(self, plan) -> None:
        """Offer the columns of a table to which permutations apply (kept chosen while they are the same columns)."""
        columns = tuple(plan.input_names or ()) if plan is not None and GROUP_ORBIT in plan.names else ()
        if columns != self._columns:
            self._columns = columns
            self.group.param.update(options={html_text(c): str(i) for i, c in enumerate(columns)}, value=[])
        self.group.visible = len(columns) > 2  # of two columns the group is all of them: "permutations" itself

    def orbits(self) -> list[str]:
        """The candidates to train: the ticked ones and, when columns are chosen, their group
        ('permutations:0,2'); a group of one column is refused (ValueError) with what to do."""
        ticked = list(self.candidates.value)
        chosen = [self._columns[int(i)] for i in self.group.value if int(i) < len(self._columns)]
        if not chosen:
            return ticked
        if len(chosen) < 2:
            raise ValueError(f"a group of columns to permute needs at least 2 columns; only {chosen[0]} is chosen: "
                             "choose another column, or empty the box")
        if len(chosen) == len(self._columns):  # every column: the whole group, "permutations" itself
            return ticked if GROUP_ORBIT in ticked else ticked + [GROUP_ORBIT]
        return ticked + [f"{GROUP_ORBIT}:{coordinates_of(chosen, self._columns)}"]

    def __panel__(self):
        return pn.Column(self.data_box, self.data_words)


__all__ = ["DEFAULT_SEEDS", "DiscoverForm"]
