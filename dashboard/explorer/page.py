"""The Explorer's page (`PageLayout`, held as `explorer.page`): its widgets, the sidebar of controls (teacher mode
keeps only a lesson's), the Training page laid out by `training_page`, the page tabs (Training, Lessons, Deep kernel
prior, Compare), presenter mode's larger parts and the lesson's banner; and the run's buttons (`run_buttons`), the
curves' download and the prior page (`prior_page`) the Explorer hands to it and to the Runs tab."""
from __future__ import annotations

from collections.abc import Callable

import panel as pn

from invlab.dashboard.controls.groups import data_controls, model_controls, optimisation_controls
from invlab.dashboard.controls.task import TaskControl
from invlab.dashboard.explorer.layout import (
    PHONE_PLOTS_CSS,
    PHONE_STATUS_CSS,
    PHONE_TABS_CSS,
    KeyViewPlacer,
    key_view_names,
    notice_html,
    notice_pane,
    phone_rows,
    presenter_order,
    presenter_styles,
    sidebar_tabs,
    training_page,
)
from invlab.dashboard.explorer.tabs import KeptTabs
from invlab.dashboard.explorer.user_data import data_choices
from invlab.dashboard.lessons.cards import LessonCards
from invlab.dashboard.lessons.catalogue import get_lesson, steps_markdown, visible_controls
from invlab.dashboard.prior.page import PriorPanel, touches_prior
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.serving.styles import settle_styles
from invlab.dashboard.words import family_help, family_sentence, not_applicable

TRAINING, LESSONS, PRIOR, COMPARE = range(4)  # the page tabs, in order


def run_buttons(start: Callable, pause: Callable, step: Callable, reset: Callable, save: Callable) -> dict:
    """The run's buttons by name ("start", "pause", "step", "reset", "save"), each calling its command when clicked."""
    buttons = {
        "start": pn.widgets.Button(label="▶ Start", color="success", width=90),
        "pause": pn.widgets.Button(label="❚❚ Pause", color="primary", width=90),
        "step": pn.widgets.Button(label="+1 Step", width=80),
        "reset": pn.widgets.Button(label="↺ Reset", color="warning", width=80),
        "save": pn.widgets.Button(label="Save checkpoint", width=140),
    }
    for key, fn in (("start", start), ("pause", pause), ("step", step), ("reset", reset), ("save", save)):
        buttons[key].on_click(fn)
    return buttons


def curves_download(curves) -> pn.widgets.FileDownload:
    """The button that downloads `curves` (a `CurveBoard`) as a CSV file named after the run shown."""
    button = pn.widgets.FileDownload(callback=curves.to_csv, filename=curves.csv_filename(),
                                     label="Download curves (CSV)", color="light", width=220)
    curves.param.watch(lambda *_: setattr(button, "filename", curves.csv_filename()), "run_name")
    return button


def prior_page() -> PriorPanel:
    """The prior page of the family that has a prior explorer (found through the model registry)."""
    from invlab.models import REGISTRY

    for spec in REGISTRY.values():
        factory = getattr(spec, "prior_explorer", None)
        if factory is not None:
            return PriorPanel(factory())
    return PriorPanel()


class PageLayout(pn.viewable.Viewer):
    """The page's widgets and their layout: the sidebar's control groups, the Training page, the page tabs (`pages`,
    built each time the page is drawn), the notices, the lesson's banner and cards, presenter mode's larger parts.

    Parts it uses: `settings` (a `RunSettings`: the controls are built from its parameters), `session` (the views are
    computed only while the Training page is shown), `status` (a `StatusBar`), `feed` (a `LiveFeed`: the curves and
    the views' area), `runs` (the Runs tab), `compare` (a `ComparePage`) and `prior` (a `PriorPanel`), each a page
    tab. `buttons`: the run's buttons by name (`run_buttons`); `presenter_box`: the presenter-mode checkbox, shown
    with the curves' options; `presenter`: whether the page starts drawn larger; `plugin_note`: the note naming
    plugins that failed; `limits`: a server's `ServerLimits` (the data it offers), None in a notebook.
    `on_page()` is called when another page tab is shown."""

    def __init__(self, settings, session, status, feed, *, runs, compare, prior, buttons: dict, presenter_box,
                 plugin_note, presenter: bool = False, limits=None, on_page: Callable[[], None] = lambda: None):
        super().__init__()
        self.settings, self.session, self.status, self.feed = settings, session, status, feed
        self.runs, self.compare, self.prior = runs, compare, prior
        self.buttons, self.presenter_box, self.plugin_note = buttons, presenter_box, plugin_note
        self.presenter, self.limits, self._on_page_shown = presenter, limits, on_page
        self.model_group = pn.Column(model_controls(settings.model_config), name="Model")
        # the chosen family in words, with its paper (the selector's hover help has every family's)
        self.family_words = pn.pane.HTML("", margin=(0, 10, 6, 10), width=300)
        self.invariance_group = pn.Column(pn.pane.Markdown("Start a run to see this family's invariance ranges."),
                                          name="Invariance")
        self.notice_pane = notice_pane()
        # the same notice at the top of the prior and Compare pages (a link's refused settings, say, on the page the
        # link opened)
        self.page_notices = [self.notice_pane, notice_pane(), notice_pane()]
        self.lesson_pane = pn.pane.Alert("", alert_type="info", visible=False, sizing_mode="stretch_width",
                                         css_classes=["invlab-lesson-banner"])
        self.lessons = LessonCards()
        # built when the page is drawn (`controls`, `__panel__`)
        self.pages = self.key_views = None
        self.family_select = self.data_group = self.train_group = self.task_control = None
        self.enlarged: list = []  # the parts presenter mode draws larger (never a plot)
        self.after_key_row: list = []  # the parts presenter mode puts under the first row of plots (its key view)

    @property
    def active(self) -> int:
        """The page tab shown (`TRAINING`, `LESSONS`, `PRIOR` or `COMPARE`); the Training page before it is drawn."""
        return self.pages.active if self.pages is not None else TRAINING

    def show_training(self) -> None:
        """Bring the Training page to the front (not yet drawn: it opens on the Training page)."""
        if self.pages is not None:
            self.pages.active = TRAINING

    def show_notice(self, text: str) -> None:
        """Show `text` (the page's notice) at the top of the Training, prior and Compare pages; nothing for no text."""
        for pane in self.page_notices:
            pane.object = notice_html(text)

    def controls(self) -> pn.Tabs:
        """The control tabs (Data, Model, Invariance, Optimisation, Runs), widgets built from the settings'
        parameters; teacher mode keeps only the controls the lesson needs."""
        family = pn.widgets.Select.from_param(self.settings.param.model, label="Model family",
                                              description=family_help(self.settings.param.model.objects))
        self.family_select = family
        self.data_group = data_controls(self.settings.data, data_choices(self.limits))
        self.train_group = optimisation_controls(self.settings.train)
        self.task_control = TaskControl(self.settings.data)  # a table's task, where the data lets it be chosen
        data_tab = pn.Column(self.data_group, self.task_control, name="Data")
        tabs = [data_tab, pn.Column(family, self.family_words, self.model_group, name="Model"),
                self.invariance_group, self.train_group,
                self.runs.__panel__()]
        shown = self._teacher_controls()
        if shown is not None:  # teacher mode: only the controls the lesson needs
            family.visible = "model" in shown
            for section, group in (("data", self.data_group), ("train", self.train_group)):
                self._hide_controls(section, group, shown)
            self._hide_controls("model", self.model_group[0], shown)
            keep = {"Data": any(k.startswith("data.") for k in shown),
                    "Model": "model" in shown or any(k.startswith("model.") for k in shown),
                    "Optimisation": any(k.startswith("train.") for k in shown), "Invariance": True, "Runs": False}
            tabs = [tab for tab in tabs if keep.get(tab.name, True)]
        self.mark_not_applicable()
        return sidebar_tabs(tabs)

    def _groups(self) -> dict:
        """The control groups by section ("data", "train", "model"); None for one not built yet."""
        return {"data": self.data_group, "train": self.train_group,
                "model": self.model_group[0] if len(self.model_group) else None}

    def mark_not_applicable(self) -> None:
        """Disable, with the reason under each, the controls that do nothing with the current settings (Degree for
        an RBF kernel, rotation for points, the learning rate of the L-BFGS solver)."""
        self.family_words.object = ('<div class="invlab-family-words" style="font-size:12px;color:#57606a;'
                                    f'line-height:1.35">{html_text(family_sentence(self.settings.model))}</div>')
        reasons = not_applicable(self.settings)
        for section, group in self._groups().items():
            for name, control in getattr(group, "controls", {}).items():
                control.set_applies(reasons.get(f"{section}.{name}", ""))

    def clear_field_messages(self) -> None:
        """Clear the messages under the fields (about values refused earlier): a value was accepted since."""
        for group in self._groups().values():
            for control in getattr(group, "controls", {}).values():
                if control.error and not control._syncing:
                    control._show_message("")

    def _teacher_controls(self) -> set[str] | None:
        """The controls teacher mode keeps ("model", "data.rotate", …), or None when not in teacher mode."""
        lesson = get_lesson(self.settings.lesson)
        return visible_controls(lesson) if self.settings.teacher and lesson is not None else None

    @staticmethod
    def _hide_controls(section: str, group, shown: set[str]) -> None:
        for name, control in getattr(group, "controls", {}).items():
            control.layout.visible = f"{section}.{name}" in shown

    def rebuild_model_controls(self) -> None:
        """Build the Model tab's controls again, for the family the settings now hold."""
        old = self.model_group[0] if len(self.model_group) else None
        group = model_controls(self.settings.model_config)
        shown = self._teacher_controls()
        if shown is not None:
            self._hide_controls("model", group, shown)
        self.model_group[:] = [group]
        settle_styles(group, pn.state.curdoc)  # its fields' first messages show as fast as later ones
        self.mark_not_applicable()
        if old is not None and hasattr(old, "close"):
            old.close()  # its controls stop following the previous family's config

    def __panel__(self) -> pn.Tabs:
        """The page tabs, drawn anew (each page drawn in the browser when it is first shown); the link's `page=` and
        a bare link (the lessons) choose the one in front."""
        curves = self.feed.curves
        run_bar = pn.Row(*(self.buttons[k] for k in ("start", "pause", "step", "reset")))
        curve_opts = pn.Row(pn.widgets.Checkbox.from_param(curves.param.logy, label="log y"),
                            pn.widgets.FloatSlider.from_param(curves.param.smoothing, width=200),
                            pn.widgets.Checkbox.from_param(curves.param.show_previous, label="previous runs"),
                            self.presenter_box)
        main = pn.Column(self.lesson_pane, run_bar, self.status,
                         self.notice_pane, self.plugin_note,
                         curves.layout, curve_opts, self.feed.views_area, curves.extra_layout,
                         sizing_mode="stretch_width")
        phone_rows(run_bar, curve_opts)  # on a phone: layout.py's phone block
        self.status.pane.stylesheets = [*self.status.pane.stylesheets, PHONE_STATUS_CSS]
        for plots in (curves.layout, curves.extra_layout, self.feed.views_area):
            plots.stylesheets = [*plots.stylesheets, PHONE_PLOTS_CSS]
        self.key_views = KeyViewPlacer(curves.layout, self.feed.views_area,
                                       key_view_names(get_lesson(self.settings.lesson)))
        sidebar = self.controls()
        layout = training_page(sidebar, main)
        self.show_lesson()
        lessons = pn.Column(self.lessons, sizing_mode="stretch_width")
        # presenter mode draws these larger; the plots are drawn larger by themselves (a CSS zoom around a Bokeh
        # canvas makes it measure its zoomed width and draw that much wider again, past the screen's edge)
        self.enlarged = [sidebar, self.lesson_pane, run_bar, self.status.pane, *self.page_notices, self.plugin_note,
                         curve_opts, lessons]
        self.after_key_row = [self.status.pane, self.notice_pane, self.plugin_note, curve_opts, self.feed.views_area,
                              curves.extra_layout]
        self.enlarge()
        # Each page is drawn when it is first shown (the browser builds one page's plots and widgets, not four), and
        # kept: showing it again costs neither the server nor the browser a new drawing. The invisible parts every
        # page needs sit outside the tabs.
        prior = pn.Column(self.page_notices[1], self.prior, sizing_mode="stretch_width", margin=0)
        compare = pn.Column(self.page_notices[2], self.compare, sizing_mode="stretch_width", margin=0)
        self.pages = KeptTabs(("Training", layout), ("Lessons", lessons), ("Deep kernel prior", prior),
                              ("Compare", compare), sizing_mode="stretch_width", stylesheets=[PHONE_TABS_CSS])
        self.pages.param.watch(self._on_page, "active")
        query = pn.state.location.query_params if pn.state.location is not None else {}
        if query.get("page") == "prior":
            self.pages.active = PRIOR
            self.prior.activate()
        elif query.get("page") == "compare":
            self.pages.active = COMPARE
        elif pn.state.location is not None and not query:
            self.pages.active = LESSONS  # a bare link lands on the lessons
        return self.pages

    def show_presenter(self, on: bool) -> None:
        """Presenter mode on or off: the page's parts drawn larger or at their own size (see `enlarge`), the lesson's
        steps folded under its title or not."""
        self.presenter = on
        self.enlarge()
        if self.pages is not None:
            self.show_lesson()

    def enlarge(self) -> None:
        """Presenter mode on or off: the controls, the banner, the buttons, the status and the lesson cards drawn
        larger or at their own size; the curves' text and lines larger; the status on rows that fit; the lesson's
        steps folded under its title (the plots on the projector's first screen)."""
        self.feed.curves.large = self.status.wrap = self.presenter
        for part in self.enlarged:
            part.styles = {**(part.styles or {}), **presenter_styles(self.presenter)}
        presenter_order(self.presenter, self.lesson_pane, self.after_key_row)  # the key view on the first screen
        self.prior.enlarge(self.presenter)
        for pane in self.feed.view_panes.values():
            pane.large = self.presenter

    def _on_page(self, event) -> None:
        self.session.views_wanted = event.new == TRAINING  # views off screen cost the training thread nothing
        if event.new == PRIOR:
            self.prior.activate()
        elif event.new == COMPARE:
            self.compare.activate()
            self.compare.discover.refresh()  # the data box follows the Training page's data
            self.compare.refresh_parameters()  # the settings to vary follow the Training page's configuration
            self.compare.refresh_sweeps()
        self._on_page_shown()

    def show_lesson(self) -> None:
        """The lesson's banner (title, what it shows, its steps) on the Training, prior and Compare pages; in teacher
        mode the prior page's controls the lesson does not touch are hidden."""
        lesson = get_lesson(self.settings.lesson)
        for pane in (self.lesson_pane, self.prior.banner, self.compare.banner):
            pane.object = steps_markdown(lesson, folded=self.presenter) if lesson is not None else ""
            pane.visible = lesson is not None and (pane is not self.prior.banner or touches_prior(lesson))
        shown = self._teacher_controls()
        for name, widget in getattr(self.prior.controls, "_widgets", {}).items():
            if name != "name":
                widget.visible = shown is None or f"prior.{name}" in shown
