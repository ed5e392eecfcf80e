"""What a change of the page's settings does (`SettingsChanges`, held as `explorer.changes`): a learning rate, a
step budget or a family's live value put on the running trainer's queue of typed edits (`invlab.train.edits`),
applied at once when it is idle, else between two steps (a finished solver re-solving), a change
that needs a new model waiting for Reset with a notice saying so, a subset larger than the data refused; then the
controls that do not apply marked, the status and the link following."""
from __future__ import annotations

from collections.abc import Callable

from invlab.dashboard.lessons.catalogue import compare_for_family, get_lesson
from invlab.errors import InvlabError
from invlab.models import get_model
from invlab.train.edits import LIVE_TRAIN_SETTINGS, SetLearningRate, SetTrainSetting, SetValue
from invlab.train.states import PageState

RESOLVE_STEPS = 10  # L-BFGS steps (of up to 20 iterations each) run when a live value changes after a finished solve


class SettingsChanges:
    """Follows the page's settings (`settings.on_change`) and applies each change to the run (see the module's doc).

    Parts it uses: `settings` (a `RunSettings`), `session` (a `TrainingSession`: the running model), `status` (a
    `StatusBar`), `page` (a `PageLayout`: the model controls rebuilt for a new family, the fields' messages cleared,
    the controls that do not apply marked), `link` (a `PageLink`: rewritten; no refusals while it is being read) and
    `display` (a `RunDisplay`: notes the live changes that label the run's curves; no changes of its own while it
    shows an opened run's settings). `say(text)` puts a message in the page's notice."""

    def __init__(self, settings, session, status, *, page, link, display, say: Callable[[str], None]):
        self.settings, self.session, self.status = settings, session, status
        self.page, self.link, self.display, self._say = page, link, display, say
        self.reset_notice: str | None = None  # "Changed X: this needs a new model. Press Reset ..." as last posted
        settings.on_change(self._on_settings_change)

    def _on_settings_change(self, events) -> None:
        if self.display.adopting:
            return
        live = dict(get_model(self.settings.model).live)
        self._refuse_oversized_subset(events)  # raises (the field explains it) after putting the value back
        self.page.clear_field_messages()  # a value was accepted: messages about earlier refused values are stale
        structural = []
        for event in events:
            if event.obj is self.settings and event.name == "model":
                lesson = get_lesson(self.settings.lesson)
                extra = compare_for_family(lesson, self.settings.model)  # the lesson's second run
                if extra:
                    self.settings.model_config.param.update(**extra)
                self.page.rebuild_model_controls()
                structural.append("model family")
            elif event.obj is self.settings.train and event.name == "learning_rate":
                self.display.note_live_change("train.learning_rate", event.new)
                self.session.commands.edit(SetLearningRate(event.new))
                self.status.learning_rate = event.new
            elif event.obj is self.settings.model_config and event.name in live:
                self.display.note_live_change(f"model.{event.name}", event.new)
                self._apply_live(live[event.name], event.new)
            elif event.obj is self.settings.train and event.name in LIVE_TRAIN_SETTINGS:
                self.session.commands.edit(SetTrainSetting(event.name, event.new))
            else:
                structural.append(event.name)
        if structural:
            self._structural_change(structural)
        self.page.mark_not_applicable()
        self.display.status_from_settings()
        self.link.update()

    def _refuse_oversized_subset(self, events) -> None:
        """A subset larger than the data has is put back at once, and refused with the data's size (the field says
        so; the URL never carries it). Not while a link is read: its values arrive one by one, and the run built from
        them says what is wrong with the whole."""
        if self.link.reading:
            return
        for event in events:
            if event.obj is self.settings.data and event.name in ("subset", "test_subset") and event.new:
                try:
                    self.settings.data.load()
                except InvlabError as err:
                    if str(event.new) in str(err) and event.name in str(err):
                        setattr(self.settings.data, event.name, event.old)
                        raise
                except Exception:  # noqa: BLE001 — other data problems are the run's to report, when it is built
                    return

    def _apply_live(self, learnable: str, value) -> None:
        if value is None or self.session.trainer is None:
            return
        try:
            self.session.commands.edit(SetValue(learnable, value))
            notice = f"{learnable} set to {value:g} in the running model"
            self._say(notice)
        except InvlabError as err:
            self._say(str(err))
            return
        done = self.session.state in (PageState.FINISHED, PageState.CONVERGED)
        if done and self.session.trainer.optimizer_name == "lbfgs":
            # a solver, not a trajectory: its answer for the new value is a few L-BFGS steps away, so give it
            self.session.commands.resolve(RESOLVE_STEPS)
            self._say(f"{notice}; re-solving ({RESOLVE_STEPS} L-BFGS steps)")

    def _structural_change(self, names) -> None:
        untrained = self.session.step == 0 and self.session.state in (PageState.IDLE, PageState.FAILED)
        if self.session.trainer is None or untrained:
            self.session.config = self.settings.run_config()
            if self.session.trainer is not None:
                self.session.commands.reset(self.settings.run_config())
            self._say("")
        else:
            self.reset_notice = (f"Changed {', '.join(sorted(set(names)))}: this needs a new model. "
                                 "Press Reset to apply (the current curves stay for comparison).")
            self._say(self.reset_notice)
