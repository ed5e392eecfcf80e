"""What the training thread does, shown on the page (`RunDisplay`, held as `explorer.display`): the periodic tick
that drains the session into the page, the status set from the session's state and its snapshots (on the page's own
event loop), a new run's start (the previous curves archived and labelled by what differed, an opened run's settings
shown in the controls, the invariance group's controls rebuilt) and the learned values set from those controls."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import panel as pn

from invlab.dashboard.controls.learned import LearnedValueControl
from invlab.dashboard.safe_text import markdown_text
from invlab.dashboard.serving.closing import connected, settle_writes
from invlab.dashboard.serving.periodic import one_message
from invlab.dashboard.serving.styles import settle_styles
from invlab.dashboard.state.settings import describe_difference
from invlab.dashboard.state_words import state_tone
from invlab.dashboard.words import orbit_words
from invlab.errors import InvlabError
from invlab.models import get_model
from invlab.train import RunConfig
from invlab.train.edits import Freeze, SetValue
from invlab.train.states import HealthState, PageState

log = logging.getLogger("invlab.dashboard.explorer.explorer")


class RunDisplay:
    """The training thread's runs, state and learned values, shown on the page (see the module's doc).

    Parts it uses: `session` (a `TrainingSession`, whose state it follows), `feed` (a `LiveFeed`: drained each tick),
    `status` (a `StatusBar`), `settings` (a `RunSettings`: an opened run's settings are shown in it), `page` (a
    `PageLayout`: the invariance group filled with the run's learned-value controls, the model controls rebuilt, the
    lesson's key views placed), `link` (a `PageLink`: it follows the run) and `runs` (a `RunsTab`: listed again when
    a run starts). `say(text)` puts a message in the page's notice; `close()` closes the Explorer (the notebook
    showing it has gone)."""

    def __init__(self, session, feed, status, settings, *, page, link, runs, say: Callable[[str], None],
                 close: Callable[[], None]):
        self.session, self.feed, self.status, self.settings = session, feed, status, settings
        self.page, self.link, self.runs = page, link, runs
        self._say, self._close = say, close
        self.doc = None  # the served page's document, once it connected
        self.kernel_loop = None  # in a notebook: the kernel's event loop, which runs the ticks
        self.heartbeat = None  # set when shown in a notebook: the page's sign of life
        self.learned_controls: dict[str, LearnedValueControl] = {}
        self.adopting = False  # True while an opened run's settings are put into the controls
        self.run_started = False  # a run has been built: the status names it, no longer the settings
        self._shown_run: str | None = None  # the label of the run the curves show
        self._current_config: RunConfig | None = None  # the configuration of the run the curves show, at its start
        self._changes_during_run: list[tuple[int, str, object]] = []  # (step, "train.learning_rate", value) set live
        session.param.watch(self._on_session_state, ["state", "message", "tone"])

    def within_limits(self, config: RunConfig, limits) -> bool:
        """Refuse (in the status) a run larger than this server's `limits` allow (a `ServerLimits`, or None: no
        limits), before anything is built."""
        if limits is None:
            return True
        try:
            limits.check(config)
        except InvlabError as err:
            self.status.param.update(state=PageState.FAILED, message=str(err), tone="error")
            return False
        return True

    def refuse_own_loop(self) -> bool:
        """Whether the run shown is a user's own loop's, which the page cannot continue (Start or Step would train
        the page's settings under that run); if so the status says so."""
        loop = self.session.opened.shown_loop()
        if loop is not None:
            self.status.param.update(message=f"run {loop.run_id} '{loop.name}' was written by your own loop, which "
                                     "the page cannot continue: ▶ Start is off. ↺ Reset trains a new run here.",
                                     tone="warning")
        return loop is not None

    def status_from_settings(self) -> None:
        """The status's run (until one is built), learning rate and step total, as the settings say (a user's own
        loop's run shown: no total, and no rate unless the loop stored its settings)."""
        if self.session.trainer is None and not self.run_started:
            self.status.run = f"{self.settings.model} on {self.settings.data.dataset}"
        loop = self.session.opened.shown_loop()
        rate = self.settings.train.learning_rate if loop is None or loop.configured else float("nan")
        self.status.param.update(learning_rate=rate, total=0 if loop is not None else int(self.settings.train.steps))

    def note_live_change(self, key: str, value) -> None:
        """Remember a setting applied to the running model, so its curves are later labelled by their course."""
        if self.session.trainer is not None and self.session.step > 0:
            self._changes_during_run.append((self.session.step, key, value))

    # -- the training thread's state, shown as soon as it changes ------------------------------------------------------
    def _on_session_state(self, *_):
        """Runs on the training thread: schedule the status update on the page's event loop."""
        doc = self.doc
        if doc is not None and doc.session_context is not None:
            try:
                doc.add_next_tick_callback(self._status_from_session)
            except Exception:  # noqa: BLE001 — the document is gone (session closed): nothing to show
                pass
        elif self.kernel_loop is not None and self.kernel_loop.is_running():
            # A notebook: Panel pushes every change over the kernel's comm at once, so a change made on this thread
            # would race the tick's own pushes (interleaved messages, models the page never gets): the kernel's
            # event loop applies it instead.
            self.kernel_loop.call_soon_threadsafe(self._status_from_session)
        elif doc is None:
            self._status_from_session()

    def _status_from_session(self) -> None:
        s = self.session
        values = dict(state=PageState.PAUSING if s.commands.pausing else s.state, step=s.step, message=s.message,
                      tone=s.tone)
        health = self.feed.last_snapshot.health if self.feed.last_snapshot is not None else None
        if s.opened.followed_health is not None:  # a run another process writes: its verdict from what it stored
            health = s.opened.followed_health
        if (s.state == PageState.RUNNING or s.opened.followed_health is not None) and health is not None \
                and health.state not in (HealthState.OK, HealthState.CONVERGED):
            values.update(state=health.state, message=health.hint,
                          tone=state_tone(health.state, HealthState))  # collapsed: error; else a warning
        if s.state == PageState.CONVERGED and not s.message:
            values.update(message="the solver has converged: its answer will not change with more steps", tone="info")
        self.status.param.update(**values)

    # -- the tick: drain the session, feed the views -------------------------------------------------------------------
    def tick(self) -> None:
        """The periodic update: stream the training thread's new points and views into the page; a notebook that stopped
        sending signs of life closes the explorer."""
        if not connected(self.doc):  # the tab closed: nothing is sent until the session ends (or it reconnects)
            self.session.watched.clear()  # and nothing trained: a reload takes the run back where it was
            settle_writes(self.doc)  # what was in flight when it closed fails quietly
            return
        self.session.watched.set()
        if self.kernel_loop is None and (self.doc is None or self.doc.session_context is None):
            try:
                self.kernel_loop = asyncio.get_running_loop()
            except RuntimeError:  # ticked by hand (tests, scripts): no loop to hand changes to
                pass
        if self.heartbeat is not None and self.heartbeat.silent():
            log.info("the notebook showing the explorer is gone: closing it")
            self._close()
            return
        try:
            with one_message(self.doc) as flush:
                update = self.feed.drain(self._start_new_run, flush)
                if update.tunables is not None:
                    self._show_learned(update.tunables)
                self._status_from_snapshot(self.feed.last_snapshot)
                self.link.follow_run()
                if self.page.key_views is not None:
                    self.page.key_views.place(self.feed.view_panes)
        except Exception as err:  # noqa: BLE001 — a drawing failure must not stop the periodic callback
            log.exception("dashboard update failed")
            self._say(f"Could not update the page ({type(err).__name__}: {err}); training goes on.")

    def _status_from_snapshot(self, snap) -> None:
        values = dict(step=self.session.step)
        if snap is not None:
            numerics = snap.numerics
            values.update(steps_per_sec=snap.steps_per_sec, device=snap.device, dtype=snap.dtype,
                          jitter=numerics.jitter, condition=numerics.condition, condition_of=numerics.condition_of)
        self.status.param.update(**values)
        self._status_from_session()

    def _start_new_run(self, update) -> None:
        old_config, new_config = self._current_config, update.config or self.session.config
        label = (describe_difference(old_config, new_config, changes=self._changes_during_run)
                 if old_config is not None else "previous run")
        # the same stored run again (opened, then followed while another page trains it): no faint copy of itself
        same_run = update.run_label.startswith("stored run") and update.run_label == self._shown_run
        self.feed.curves.archive(label, keep=not same_run)
        self._shown_run = update.run_label
        self._current_config = RunConfig.from_json(new_config.to_json())  # the session's own changes as it runs
        self._changes_during_run = []
        self.run_started = True
        loop = self.session.opened.shown_loop()  # a user's own loop's run: the page cannot continue it
        self.status.run = loop.title if loop else f"{new_config.model} on {new_config.data.get('dataset', 'digits')}"
        if update.config is not None and update.config.to_json() != self.settings.run_config().to_json() \
                and update.run_label.startswith("stored run") and (loop is None or loop.configured):
            self.adopt(update.config)
        for key in ("start", "step"):  # they would train the page's settings instead, under the loop's run
            self.page.buttons[key].disabled = loop is not None
        if loop is not None:
            self.status_from_settings()  # no step total (and no rate) the loop never had
            self._say(loop.settings_note or "")
        self.feed.last_snapshot = None  # the old run's figures and health say nothing about the new one
        dataset = getattr(self.session.trainer, "dataset", None)
        target = (getattr(dataset, "metadata", None) or {}).get("target")
        self.feed.curves.target_name = None if target is None else str(target)  # a table's column names RMSE's units
        self.rebuild_learned_controls()
        self.runs.refresh()
        if self.doc is not None and self.doc.session_context is not None:
            # again once this tick's batch of new plots is attached: a change made while it is held can be lost
            self.doc.add_next_tick_callback(self.status_from_settings)

    def adopt(self, config: RunConfig) -> None:
        """Show an opened run's settings in the controls (without asking for a Reset)."""
        self.adopting = True
        try:
            self.settings.model = config.model
            for section, values in (("data", config.data), ("model", config.model_config), ("train", config.train)):
                obj = self.settings.section(section)
                obj.param.update(**{k: v for k, v in values.items() if k in obj.param and k != "name"})
            self.page.rebuild_model_controls()
        finally:
            self.adopting = False
        self._say("")
        self.status_from_settings()  # the opened run's learning rate and steps, as its boxes now say
        self.link.update()

    def rebuild_learned_controls(self) -> None:
        """The Invariance tab for the run now built: a control for each learned invariance range, or a sentence
        saying why there is none (the family has none; a finite orbit, named)."""
        trainer = self.session.trainer
        self.learned_controls = {}
        tunables = trainer.model.tunables() if trainer is not None and hasattr(trainer.model, "tunables") else []
        tunables = [t for t in tunables if t.group == "invariance"]
        if not tunables:
            family = self.session.config.model
            augmentation = self.session.config.model_config.get("augmentation")
            if augmentation is not None and trainer is not None:  # a finite orbit: say what it is
                kind = "image" if getattr(trainer.dataset, "image_shape", None) else "points"
                text = markdown_text(orbit_words(family, augmentation, kind))
            else:
                text = f"The **{markdown_text(family)}** family has no invariance ranges to set."
            self.page.invariance_group[:] = [pn.pane.Markdown(text)]
            return
        controls = []
        for tunable in tunables:
            ctl = LearnedValueControl(tunable, self.set_learned, self._freeze_learned)
            self.learned_controls[tunable.name] = ctl
            controls.append(ctl.panel)
        self.page.invariance_group[:] = controls
        settle_styles(self.page.invariance_group, pn.state.curdoc)

    def set_learned(self, name: str, value: float) -> None:
        """Set the learned value `name` to `value` (what releasing its slider calls): through the family's setting
        when one is that quantity (the Model tab's box and the link follow), else in the running model."""
        setting = {learnable: key for key, learnable in get_model(self.settings.model).live}.get(name)
        if setting is not None and setting in self.settings.model_config.param:
            # one quantity, one parameter: the config's value (the Model tab's box, the URL) is set, and setting it
            # applies it live (re-solving a finished solver)
            try:
                setattr(self.settings.model_config, setting, value)
            except ValueError as err:
                self._say(str(err))
            return
        try:
            self.session.commands.edit(SetValue(name, value))
            ctl = self.learned_controls.get(name)
            label = ctl.tunable.label if ctl is not None else name
            self._say(f"{label} set to {value:g}" + (f" ({name})" if ctl is not None else ""))
        except InvlabError as err:
            self._say(str(err))

    def _freeze_learned(self, name, frozen):
        self.session.commands.edit(Freeze(name, frozen))

    def _show_learned(self, tunables) -> None:
        values = {t.name: t.value for t in tunables}
        for name, ctl in self.learned_controls.items():
            if name in values:
                ctl.show(values[name])

