"""The Compare page's launch form (`SweepForm`, a part the `ComparePage` holds as `page.form`): the setting a sweep
varies, its values and seeds, a built-in study, the stored sweeps a page can open, where the runs train, and what
is wrong with the form, said under it.
"""
from __future__ import annotations

import panel as pn
import param

from invlab.dashboard.compare.context import CompareContext
from invlab.dashboard.compare.data import _fmt_value, _parse_token, _spread
from invlab.dashboard.safe_text import markdown_text
from invlab.dashboard.state.settings import coerce
from invlab.errors import InvlabError
from invlab.sweeps import STUDIES, SweepSpec, study


def _now(p: param.Parameter, value) -> str:
    """"now 0.01": a setting's value now; an empty one (None) says what empty means, from its doc ("now empty: median
    distance between training inputs"), or "now empty"."""
    if value is not None:
        return f"now {_fmt_value(value)}"
    meaning = (p.doc or "").partition("empty = ")[2].strip().rstrip(".")
    return f"now empty: {meaning}" if meaning else "now empty"


class SweepForm(pn.viewable.Viewer):
    """The form that describes a sweep, and its buttons. It reads the page's `context` (a `CompareContext`: the
    Training page's settings the sweep varies, the store's sweeps, where the runs train and who may type a scheduler)
    and asks the page to run a sweep (`launch`, with `spec`) or show a stored one (`open`, with `sweep_to_open`)."""

    spec = param.ClassSelector(class_=SweepSpec, doc="The sweep `launch` asks the page to run.")
    launch = param.Event(doc="▶ Run sweep or ▶ Run study: the page runs `spec`.")
    sweep_to_open = param.Integer(default=None, allow_None=True, doc="The stored sweep `open` asks to show.")
    open = param.Event(doc="Open sweep: the page shows `sweep_to_open`.")

    def __init__(self, context: CompareContext):
        super().__init__(name="Sweep form")
        self.context = context
        self.settings, self.choice = context.settings, context.choice
        self._build_widgets(context.param.n_workers, context.param.scheduler)
        context.param.watch(lambda event: self.show_scheduler_refusal(event.new), "scheduler_refusal")

    def _build_widgets(self, n_workers: param.Parameter, scheduler: param.Parameter) -> None:
        self.parameter = pn.widgets.Select(label="Setting to vary", options=self.parameter_options(), width=300)
        self.values = pn.widgets.TextInput(label="Values (comma-separated)", placeholder="e.g. 0, 45, 90, 135",
                                           width=300)
        self.seeds = pn.widgets.IntInput(label="Seeds per value", value=2, start=1, end=20, width=140)
        self.launch_button = pn.widgets.Button(label="▶ Run sweep", color="success", width=140)
        self.study_select = pn.widgets.Select(label="Built-in study", options=list(STUDIES), width=300)
        self.quick = pn.widgets.Checkbox(
            label="short form (one seed, five angles: about 15 s on 2 cores; untick for the full study, "
                  "3 seeds × 14 angles, about 75 s)",
            value=True)
        self.study_button = pn.widgets.Button(label="▶ Run study", color="success", width=140)
        self.sweeps_select = pn.widgets.Select(label="Stored sweeps", options={}, width=300)
        self.open_button = pn.widgets.Button(label="Open sweep", width=140)
        self.workers = pn.widgets.IntInput.from_param(n_workers, label="Workers (0: one per core)", width=140)
        self.scheduler_input = pn.widgets.TextInput.from_param(
            scheduler, label="Dask scheduler", placeholder=self.choice.words(), width=300,
            disabled=not self.choice.page_may_choose, css_classes=["invlab-scheduler"])
        self.scheduler_note = pn.pane.Alert("", alert_type="warning", visible=False, width=300,
                                            css_classes=["invlab-scheduler-note"])  # a refused address, said why
        self.scheduler_note_text = ""  # what scheduler_note says, as text
        self.form_error = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self.form_error_text = ""  # what form_error says, as text (the pane holds it escaped)
        self.launch_button.on_click(lambda *_: self.launch_from_settings())
        self.study_button.on_click(lambda *_: self.launch_study(self.study_select.value, quick=self.quick.value))
        self.open_button.on_click(lambda *_: self.sweeps_select.value is not None
                                  and self.param.update(sweep_to_open=self.sweeps_select.value, open=True))
        self.parameter.param.watch(lambda event: self._suggest_values(event.new), "value")
        self._suggest_values(self.parameter.value)

    def __panel__(self) -> pn.FlexBox:
        """The form's boxes: vary a setting, a built-in study, a stored sweep, where the runs train."""
        vary = pn.Column(pn.pane.Markdown("**Vary a setting of the Training page's configuration**", margin=(0, 10)),
                         self.parameter, self.values, pn.Row(self.seeds, self.launch_button),
                         name="Vary a setting")
        builtin = pn.Column(pn.pane.Markdown("**Run a built-in study**", margin=(0, 10)), self.study_select,
                            self.quick, self.study_button, name="Built-in study")
        stored = pn.Column(pn.pane.Markdown("**Open a stored sweep**", margin=(0, 10)), self.sweeps_select,
                           self.open_button, name="Stored sweep")
        if self.choice.server_address:  # the server's scheduler: its workers are the server's choice
            here = pn.pane.Markdown("This server's Dask scheduler, chosen by the person running it.", width=300,
                                    margin=(0, 10))
        elif self.context.shared_cluster:  # the server's cluster: its size is the server's, not a page's
            here = pn.pane.Markdown("Empty: this server's Dask cluster, one worker per core, shared by every page.",
                                    width=300, margin=(0, 10))
        else:
            here = self.workers
        where = pn.Column(pn.pane.Markdown("**Where the runs train**", margin=(0, 10)), here,
                          self.scheduler_input, self.scheduler_note, name="Workers")
        return pn.FlexBox(vary, builtin, stored, where, sizing_mode="stretch_width")

    def parameter_options(self) -> dict[str, str]:
        """The settings a sweep can vary: the family, then every data / model / training setting of the current
        configuration (labelled with its value now); the seed is varied by "Seeds per value"."""
        options = {f"model family (now {self.settings.model})": "model"}
        for section in ("model", "data", "train"):
            obj = self.settings.section(section)
            for name in obj.param:
                if name == "name" or (section == "train" and name == "seed"):
                    continue
                options[f"{section}.{name} ({_now(obj.param[name], getattr(obj, name))})"] = f"{section}.{name}"
        return options

    def refresh_parameters(self) -> None:
        """Follow the Training page's family and values (the Compare tab shows them when it is opened)."""
        current = self.parameter.value
        options = self.parameter_options()
        self.parameter.options = options
        if current in options.values():
            self.parameter.value = current

    def _suggest_values(self, dotted: str | None) -> None:
        """A placeholder that says what the chosen setting accepts."""
        p = self.parameter_object(dotted)
        objects = getattr(p, "objects", None) if p is not None else None
        if dotted == "model":
            from invlab.models import model_names

            objects = model_names()
        if objects:
            self.values.placeholder = "e.g. " + ", ".join(_fmt_value(o) for o in list(objects)[:4])
        elif isinstance(p, param.Boolean):
            self.values.placeholder = "true, false"
        elif p is not None and getattr(p, "bounds", None):
            lo, hi = p.bounds
            self.values.placeholder = f"numbers in [{_fmt_value(lo)}, {_fmt_value(hi)}], e.g. " + \
                ", ".join(_fmt_value(v) for v in _spread(lo, hi, getattr(p, "default", None)))
        else:
            self.values.placeholder = "comma-separated values"

    def parameter_object(self, dotted: str | None):
        """The parameter that `dotted` ("section.name") names in the Training page's configuration; None for the
        family or an unknown name."""
        if not dotted or "." not in dotted:
            return None
        section, _, name = dotted.partition(".")
        obj = self.settings.section(section)
        return obj.param[name] if name in obj.param else None

    def refresh_sweeps(self, shown: int | None = None) -> None:
        """Re-read the stored sweeps (those this page's user may see) into the sweep selector, choosing `shown` (the
        sweep the page shows) when none is chosen; a store error shows under the form."""
        store = self.context.store
        if store is None or not hasattr(store, "sweeps"):
            return
        try:
            sweeps = store.sweeps.list()
        except InvlabError as err:
            self.show_error(str(err))
            return
        options = {}
        for s in sweeps:
            name = getattr(s, "name", "") or "sweep"
            status = getattr(s, "status", "")
            options[f"#{s.id} {name}" + (f" — {status}" if status else "")] = s.id
        self.sweeps_select.options = options
        if options and self.sweeps_select.value not in options.values():
            shown = shown if shown in options.values() else next(iter(options.values()))
            self.sweeps_select.value = shown

    # -- launching -----------------------------------------------------------------------------------------------------
    def spec_from_settings(self, dotted: str | None = None, values: str | list | None = None,
                           seeds: int | None = None) -> SweepSpec:
        """The sweep the form describes: the Training page's configuration with `dotted` set to each of `values`
        (text as typed, comma-separated), times `seeds` seeds. Raises InvlabError naming what is wrong."""
        dotted = dotted if dotted is not None else self.parameter.value
        values = values if values is not None else self.values.value
        seeds = int(seeds if seeds is not None else self.seeds.value)
        if not dotted:
            raise InvlabError("choose the setting to vary")
        if isinstance(values, str):
            tokens = [t.strip() for t in values.replace(";", ",").split(",") if t.strip()]
            if not tokens:
                raise InvlabError(f"{dotted}: enter the values to try, separated by commas (e.g. 0, 45, 90)")
            p = self.parameter_object(dotted)
            parsed = []
            for token in tokens:
                value = _parse_token(token)
                parsed.append(coerce(p, value, dotted) if p is not None else value)
            values = parsed
        if seeds < 1:
            raise InvlabError("seeds per value: at least 1")
        base = self.settings.run_config()
        first_seed = int(self.settings.train.seed or 0)
        name = f"{dotted} over {len(values)} values × {seeds} seeds"
        spec = SweepSpec(name=name, base=base, vary={dotted: list(values)}, mode="grid",
                         seeds=list(range(first_seed, first_seed + seeds)))
        spec.validate()
        return spec

    def launch_from_settings(self) -> None:
        """Start a sweep varying the form's setting over its values and seeds on the Training page's configuration; a
        bad form shows its message under the form."""
        try:
            spec = self.spec_from_settings()
        except (InvlabError, ValueError, TypeError) as err:
            self.show_error(str(err))
            return
        self.param.update(spec=spec, launch=True)

    def launch_study(self, name: str, quick: bool = True) -> None:
        """Start the built-in study `name` (`quick`: its short form); an unknown or invalid one shows its message under
        the form."""
        try:
            spec = study(name, quick=quick)
            spec.validate()
        except (InvlabError, KeyError, ValueError) as err:
            self.show_error(str(err))
            return
        self.param.update(spec=spec, launch=True)

    def show_scheduler_refusal(self, text: str) -> None:
        """Say beside the scheduler box why its address was refused (empty: hide the note)."""
        self.scheduler_note_text = text
        self.scheduler_note.object = markdown_text(text)
        self.scheduler_note.visible = bool(text)

    def show_error(self, text: str) -> None:
        """Say `text` under the form (empty: hide the message)."""
        self.form_error_text = text
        self.form_error.object = markdown_text(text)
        self.form_error.visible = bool(text)
