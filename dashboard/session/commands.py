"""The commands a page gives its training session, from any thread: start, pause, step, re-solve, reset, open a stored
run, save a checkpoint and stop are queued to the session's training thread (a command that replaces or redirects a
running run also ends its training loop); live edits (typed: learning rate, learnable values, freezing, train
settings such as steps) go on the trainer's one queue of edits (`edit`), applied at once if it is idle, else before
its next step. `Interruption` is what a training loop polls
between steps to know it must end.
"""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable

from invlab.errors import ConfigError, InvlabError
from invlab.train import RunConfig, Trainer
from invlab.train.edits import Edit
from invlab.train.states import PageState


class SessionCommands:
    """The commands and live edits of a `TrainingSession` (see the module's doc; the session holds it as
    `session.commands`). It holds the queue of commands to the training thread, the work done between two steps, the
    pause flag, the count of queued commands that redirect a running run (under its lock) and whether the session is
    alive.

    What it uses of the session: `ensure_thread()` starts its training thread, `trainer()` and `config()` are the run
    it trains now and that run's settings, `save()` saves a checkpoint (on the training thread) and `state()` is the
    session's state."""

    REDIRECTS = ("reset", "open", "step", "steps")  # commands that end a running training loop

    def __init__(self, *, ensure_thread: Callable[[], threading.Thread], trainer: Callable[[], Trainer | None],
                 config: Callable[[], RunConfig], save: Callable[[], None], state: Callable[[], str]):
        self._ensure_thread, self._trainer, self._config, self._save, self._state = (
            ensure_thread, trainer, config, save, state)
        self._commands: queue.Queue = queue.Queue()
        self._between_steps: queue.Queue = queue.Queue()  # work done between two steps, even while training runs
        self._pause = threading.Event()
        self._redirects = 0  # queued commands that end a running training loop (reset, open, step), not yet taken
        self._redirects_lock = threading.Lock()
        self._alive = True

    # -- the training thread's side ------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """The session goes on (False once `end` was called: the thread ends after its current command)."""
        return self._alive

    def next(self, timeout: float) -> tuple[str, object]:
        """The next command and its argument, waiting up to `timeout` seconds (raises `queue.Empty`); a command that
        redirects a run is counted as taken."""
        command, arg = self._commands.get(timeout=timeout)
        if command in self.REDIRECTS:
            with self._redirects_lock:
                self._redirects -= 1
        return command, arg

    def do_between_steps(self, say: Callable[[str], None]) -> None:
        """Do the work queued for between two steps (on the training thread); an `InvlabError` of one is said with
        `say(text)` and the rest is still done."""
        while True:
            try:
                work = self._between_steps.get_nowait()
            except queue.Empty:
                return
            try:
                work()
            except InvlabError as err:
                say(str(err))

    def redirected(self) -> bool:
        """Whether a queued command replaces or redirects the run, or the session ends (a run of a given number of
        steps ends early only for these: its own Step press set the pause)."""
        return self._redirects > 0 or not self._alive

    def end(self) -> None:
        """The session ends: a training loop ends at its next check and the thread at the `stop` command queued."""
        self._alive = False
        self._pause.set()
        self._commands.put(("stop", None))

    # -- commands (any thread) -----------------------------------------------------------------------------------
    def _command(self, command: str, arg=None) -> None:
        if command in self.REDIRECTS:
            with self._redirects_lock:
                self._redirects += 1
        self._commands.put((command, arg))
        self._ensure_thread()

    def interrupted(self) -> bool:
        """Whether a running training loop must end now: Pause was pressed, or a command that replaces or
        redirects the run waits in the queue. A Start given after a Reset clears the pause but not the Reset, so
        the old run still stops and the new one trains (not the old one on to its end)."""
        return self._pause.is_set() or self._redirects > 0 or not self._alive

    def start(self) -> None:
        """Start or continue training in the session's thread."""
        self._pause.clear()
        self._command("start")

    def pause(self) -> None:
        """Pause training after the step in progress."""
        self._pause.set()

    def step_once(self) -> None:
        """Take one step and pause."""
        self._pause.set()
        self._command("step")

    def resolve(self, steps: int) -> None:
        """Run `steps` more steps, even past the configured count (a finished solve re-solving after a live edit)."""
        self._pause.set()
        self._command("steps", int(steps))

    def reset(self, config: RunConfig | None = None) -> None:
        """Build a fresh model (from `config` if given); the old run's curves stay for comparison."""
        self._pause.set()
        self._command("reset", config)

    def open_run(self, run_id: int) -> None:
        """Open stored run `run_id` in the session's thread (paused), to show and continue it."""
        self._pause.set()
        self._command("open", int(run_id))

    def save_checkpoint(self) -> str:
        """Save a checkpoint now and return its path (waits for a running step or evaluation to end)."""
        if self._trainer() is None:
            raise InvlabError("nothing to save yet: press Start or Step first")
        return str(self._trainer().save_checkpoint())

    def request_checkpoint(self) -> None:
        """Save a checkpoint between two steps; the path (or what went wrong) follows in `message`.

        What a page calls: saving holds the trainer's lock, which a running evaluation may hold for seconds."""
        if self._trainer() is None:
            raise InvlabError("nothing to save yet: press Start or Step first")
        self._between_steps.put(self._save)
        self._command("wake")  # an idle thread does it at once

    @property
    def pausing(self) -> bool:
        """Pause was asked for and the thread is finishing its step (the page says "pausing…" meanwhile)."""
        return self._pause.is_set() and self._state() in (PageState.RUNNING, PageState.QUEUED)

    # -- live edits -------------------------------------------------------------------------------------------------
    def edit(self, edit: Edit) -> bool:
        """Put a typed live edit (`invlab.train.edits`: learning rate, a learnable's value, freezing, a train
        setting) on the running trainer's queue, and into the settings of the session's next run when it is a train
        setting; True if the trainer applied it at once.

        It never waits for a step or an evaluation: an idle trainer applies it now (so a value read back right after
        is the new one; an unknown name or a refused value raises at once), a busy one just before its next step, and
        a paused session's thread applies a queued edit as soon as it is free (a refusal then is said in the
        session's message)."""
        entry = edit.train_setting()
        if entry is not None:
            self._config().train[entry[0]] = entry[1]
        trainer = self._trainer()
        if trainer is None:
            return False
        if trainer.edits.put(edit):
            return True
        self._between_steps.put(lambda: _applied(trainer.edits.apply_pending()))
        self._command("wake")  # an idle thread applies it at once; a training one between its next two steps
        return False


def _applied(refused: str | None) -> None:
    """A queued edit applied by the session's thread; one that was refused is said (`do_between_steps`)."""
    if refused is not None:
        raise ConfigError(refused)


class Interruption:
    """The `stop` a training loop polls between steps: the session's commands' `interrupted()` (for a run of a given
    number of steps, only a queued command ends it early: its own Step/Resolve press set the pause)."""

    def __init__(self, commands: SessionCommands, steps_only: bool):
        self.commands, self.steps_only = commands, steps_only

    def is_set(self) -> bool:
        """Whether the loop must end now."""
        return self.commands.redirected() if self.steps_only else self.commands.interrupted()

    def wait(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds (the steps/s pacing) for the loop to be told to end; whether it was."""
        end = time.perf_counter() + timeout
        while not self.is_set():
            left = end - time.perf_counter()
            if left <= 0:
                return False
            time.sleep(min(left, 0.02))
        return True
