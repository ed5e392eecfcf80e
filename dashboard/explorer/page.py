"""The Explorer's page: its widgets, the sidebar of controls (teacher mode keeps only a lesson's), the Training page
laid out by `page_layout`, and the page tabs (Training, Lessons, Deep kernel prior, Compare)."""
from __future__ import annotations

import panel as pn

from invlab.dashboard.compare import ComparePage
from invlab.dashboard.controls.groups import data_controls, model_controls, optimisation_controls
from invlab.dashboard.controls.number_guard import NumberBoxGuard
from invlab.dashboard.controls.task import TaskControl
from invlab.dashboard.explorer.layout import (
    KeyViewPlacer,
    key_view_names,
    notice_pane,
    presenter_styles,
    sidebar_tabs,
    training_page,
)
from invlab.dashboard.explorer.runs import RunsTab
from invlab.dashboard.explorer.user_data import data_choices
from invlab.dashboard.lessons.cards import LessonCards
from invlab.dashboard.lessons.catalogue import get_lesson, steps_markdown, visible_controls
from invlab.dashboard.prior.page import URL_KEYS as PRIOR_URL_KEYS
from invlab.dashboard.prior.page import PriorPanel
from invlab.dashboard.safe_text import html_text
from invlab.dashboard.serving.styles import settle_styles
from invlab.dashboard.serving.theme import ThemeSwitch
from invlab.dashboard.words import family_help, family_sentence, not_applicable


class ExplorerPage:
    """Mixed into `Explorer`: building and laying out the page (see the module's doc)."""

    def _build_widgets(self) -> None:
        self.buttons = {
            "start": pn.widgets.Button(label="▶ Start", color="success", width=90),
            "pause": pn.widgets.Button(label="❚❚ Pause", color="primary", width=90),
            "step": pn.widgets.Button(label="+1 Step", width=80),
            "reset": pn.widgets.Button(label="↺ Reset", color="warning", width=80),
            "save": pn.widgets.Button(label="Save checkpoint", width=140),
        }
        for key, fn in (("start", self.start), ("pause", self.pause), ("step", self.step), ("reset", self.reset),
                        ("save", self.save_checkpoint)):
            self.buttons[key].on_click(fn)
        self.download = pn.widgets.FileDownload(callback=self.curves.to_csv, filename="invlab_curves.csv",
                                                label="Download curves (CSV)", color="light", width=220)
        self.runs = RunsTab(self.session, self.status, store=self._store_given, user=self.user, admin=self.admin,
                            say=lambda text: setattr(self, "notice", text), show_training=self._show_training_page,
                            buttons=(self.buttons["save"], self.download))
        self.model_group = pn.Column(model_controls(self.settings.model_config), name="Model")
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
        self.theme_switch = ThemeSwitch(self._switch_theme)
        self.url_field = pn.widgets.TextInput(value="", visible=False)
        self.url_field.jscallback(value="""
            const url = window.location.pathname + cb_obj.value + window.location.hash;
            if (url !== window.location.pathname + window.location.search + window.location.hash)
              window.history.replaceState(window.history.state, "", url);""")
        self.prior = self._prior_page()
        self.compare = ComparePage(self.settings, lambda: self.store, on_open_run=self.open_stored_run,
                                   data_choices=lambda: data_choices(self.limits), limits=self.limits)
        self.compare.param.watch(lambda *_: self._update_location(), ["sweep_id", "discover_shown"])
        self.prior.explorer.param.watch(lambda *_: self._update_location(), list(PRIOR_URL_KEYS))

    def _show_training_page(self) -> None:
        if hasattr(self, "pages"):  # (not yet laid out: it opens on the Training page)
            self.pages.active = 0

    def _prior_page(self):
        """The prior explorer of the family that has one (found through the model registry)."""
        from invlab.models import REGISTRY

        for spec in REGISTRY.values():
            factory = getattr(spec, "prior_explorer", None)
            if factory is not None:
                return PriorPanel(factory())
        return PriorPanel()

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
        self._mark_not_applicable()
        return sidebar_tabs(tabs)

    def _mark_not_applicable(self) -> None:
        """Disable, with the reason under each, the controls that do nothing with the current settings (Degree for
        an RBF kernel, rotation for points, the learning rate of the L-BFGS solver)."""
        self.family_words.object = ('<div class="invlab-family-words" style="font-size:12px;color:#57606a;'
                                    f'line-height:1.35">{html_text(family_sentence(self.settings.model))}</div>')
        reasons = not_applicable(self.settings)
        groups = {"data": getattr(self, "data_group", None), "train": getattr(self, "train_group", None),
                  "model": self.model_group[0] if len(self.model_group) else None}
        for section, group in groups.items():
            for name, control in getattr(group, "controls", {}).items():
                control.set_applies(reasons.get(f"{section}.{name}", ""))

    def _teacher_controls(self) -> set[str] | None:
        """The controls teacher mode keeps ("model", "data.rotate", …), or None when not in teacher mode."""
        lesson = get_lesson(self.settings.lesson)
        return visible_controls(lesson) if self.settings.teacher and lesson is not None else None

    @staticmethod
    def _hide_controls(section: str, group, shown: set[str]) -> None:
        for name, control in getattr(group, "controls", {}).items():
            control.layout.visible = f"{section}.{name}" in shown

    def _rebuild_model_controls(self) -> None:
        old = self.model_group[0] if len(self.model_group) else None
        group = model_controls(self.settings.model_config)
        shown = self._teacher_controls()
        if shown is not None:
            self._hide_controls("model", group, shown)
        self.model_group[:] = [group]
        settle_styles(group, pn.state.curdoc)  # its fields' first messages show as fast as later ones
        self._mark_not_applicable()
        if old is not None and hasattr(old, "close"):
            old.close()  # its controls stop following the previous family's config

    def __panel__(self):
        if pn.state.location is not None and self._location is None:
            self.read_location(pn.state.location)  # before anything is drawn: the link's family and controls
        run_bar = pn.Row(*(self.buttons[k] for k in ("start", "pause", "step", "reset")))
        curve_opts = pn.Row(pn.widgets.Checkbox.from_param(self.curves.param.logy, label="log y"),
                            pn.widgets.FloatSlider.from_param(self.curves.param.smoothing, width=200),
                            pn.widgets.Checkbox.from_param(self.curves.param.show_previous, label="previous runs"))
        curve_opts.append(pn.widgets.Checkbox.from_param(self.param.presenter, label="presenter (larger page)"))
        main = pn.Column(self.lesson_pane, run_bar, self.status,
                         self.notice_pane, self.plugin_note,
                         self.curves.layout, curve_opts, self.feed.views_area, self.curves.extra_layout,
                         sizing_mode="stretch_width")
        self.key_views = KeyViewPlacer(self.curves.layout, self.feed.views_area,
                                       key_view_names(get_lesson(self.settings.lesson)))
        sidebar = self.controls()
        layout = training_page(sidebar, main)
        self._show_lesson()
        lessons = pn.Column(self.lessons, sizing_mode="stretch_width")
        # presenter mode draws these larger; the plots are drawn larger by themselves (a CSS zoom around a Bokeh
        # canvas makes it measure its zoomed width and draw that much wider again, past the screen's edge)
        self._enlarged = [sidebar, self.lesson_pane, run_bar, self.status.pane, *self.page_notices, self.plugin_note,
                          curve_opts, lessons]
        self._enlarge_parts()
        # Each page is drawn when it is first shown (the browser builds one page's plots and widgets, not four), and
        # kept: showing it again draws the same models. The invisible parts every page needs sit outside the tabs.
        prior = pn.Column(self.page_notices[1], self.prior, sizing_mode="stretch_width", margin=0)
        compare = pn.Column(self.page_notices[2], self.compare, sizing_mode="stretch_width", margin=0)
        self.pages = pn.Tabs(("Training", layout), ("Lessons", lessons), ("Deep kernel prior", prior),
                             ("Compare", compare), dynamic=True, sizing_mode="stretch_width")
        self.pages.param.watch(self._on_page, "active")
        query = pn.state.location.query_params if pn.state.location is not None else {}
        if query.get("page") == "prior":
            self.pages.active = 2
            self.prior.activate()
        elif query.get("page") == "compare":
            self.pages.active = 3
        elif pn.state.location is not None and not query:
            self.pages.active = 1  # a bare link lands on the lessons
        pn.state.onload(self._on_load)
        if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
            # Also for a page that never connects (Bokeh ends it after --unused-session-lifetime): whatever it
            # holds goes with it.
            self._close_with(pn.state.curdoc)
        hidden = pn.Column(self.url_field, self.theme_switch.field, NumberBoxGuard(width=0, height=0, margin=0),
                           self.view_watch, height=0, margin=0)
        return pn.Column(hidden, self.pages, sizing_mode="stretch_width", margin=0)

    def _enlarge_parts(self) -> None:
        """Presenter mode on or off: the controls, the banner, the buttons, the status and the lesson cards drawn
        larger or at their own size; the curves' text and lines larger; the status on rows that fit; the lesson's
        steps folded under its title (the plots on the projector's first screen)."""
        self.curves.large = self.status.wrap = self.presenter
        for part in getattr(self, "_enlarged", ()):
            part.styles = {**(part.styles or {}), **presenter_styles(self.presenter)}

    def _on_page(self, event) -> None:
        self.session.views_wanted = event.new == 0  # views off screen cost the training thread nothing
        if event.new == 2:
            self.prior.activate()
        elif event.new == 3:
            self.compare.activate()
            self.compare.discover.refresh()  # the data box follows the Training page's data
            self.compare.refresh_parameters()  # the settings to vary follow the Training page's configuration
            self.compare.refresh_sweeps()
        self._update_location()

    def _show_lesson(self) -> None:
        """The lesson's banner (title, what it shows, its steps) on the Training, prior and Compare pages; in teacher
        mode the prior page's controls the lesson does not touch are hidden."""
        lesson = get_lesson(self.settings.lesson)
        for pane in (self.lesson_pane, self.prior.banner, self.compare.banner):
            pane.object = steps_markdown(lesson, folded=self.presenter) if lesson is not None else ""
            pane.visible = lesson is not None
        shown = self._teacher_controls()
        for name, widget in getattr(self.prior.controls, "_widgets", {}).items():
            if name != "name":
                widget.visible = shown is None or f"prior.{name}" in shown
