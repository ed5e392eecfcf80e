"""The commands a page gives its `TrainingSession`, from any thread: start, pause, step, re-solve, reset, open a stored
run, save a checkpoint and stop are queued to the session's training thread (a command that replaces or redirects a
running run also ends its training loop); live edits (learning rate, learnable values, freezing) go to the Trainer,
which applies them at once if it is idle, else before its next step. Mixed into `TrainingSession` (session.py).
"""
from __future__ import annotations

import threading
import traceback

from invlab.errors import InvlabError
from invlab.train import RunConfig
from invlab.train.states import PageState


class SessionCommands:
    """Mixed into `TrainingSession`: its commands and live edits (see the module's doc); the session holds the queues,
    the pause flag and the thread they drive."""

    # -- commands (any thread) -----------------------------------------------------------------------------------
    REDIRECTS = ("reset", "open", "step", "steps")  # commands that end a running training loop

    def _command(self, command: str, arg=None) -> None:
        if command in self.REDIRECTS:
            with self._redirects_lock:
                self._redirects += 1
        self._commands.put((command, arg))
        self._ensure_thread()

    def _interrupted(self) -> bool:
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
        if self.trainer is None:
            raise InvlabError("nothing to save yet: press Start or Step first")
        return str(self.trainer.save_checkpoint())

    def request_checkpoint(self) -> None:
        """Save a checkpoint between two steps; the path (or what went wrong) follows in `message`.

        What a page calls: saving holds the trainer's lock, which a running evaluation may hold for seconds."""
        if self.trainer is None:
            raise InvlabError("nothing to save yet: press Start or Step first")
        self._between_steps.put(self._save)
        self._command("wake")  # an idle thread does it at once

    def stop(self, timeout: float = 10.0, wait: bool = True) -> None:
        """End the thread (the browser session is gone). With `wait=False` this returns at once: the thread ends
        after its current step or evaluation and closes the store it owns; a server thread never waits for it."""
        self._alive = False
        self._pause.set()
        self._commands.put(("stop", None))
        with self._thread_guard:
            self._stopped = True
            thread = self._thread
        if thread is None:  # it never started: nothing runs, only the store is left to close
            self._close_store()
            return
        if wait and threading.current_thread() is not thread:
            thread.join(timeout)

    def _close_store(self) -> None:
        store, self.store = (self.store, None) if self.owns_store else (None, self.store)
        if store is not None:
            try:
                store.close()
            except Exception:  # noqa: BLE001 — a store that cannot flush now has nothing more to lose
                traceback.print_exc()

    @property
    def pausing(self) -> bool:
        """Pause was asked for and the thread is finishing its step (the page says "pausing…" meanwhile)."""
        return self._pause.is_set() and self.state in (PageState.RUNNING, PageState.QUEUED)

    # -- live edits -------------------------------------------------------------------------------------------------
    # Live edits never wait for a step or an evaluation: the trainer applies them now if it is idle, else just
    # before its next step (`Trainer.edit`), so the server thread stays free for every other session.
    def set_learning_rate(self, lr: float) -> None:
        """Set the learning rate of the configuration and, at the next step, of the running trainer."""
        self.config.train["learning_rate"] = lr
        if self.trainer is not None:
            self.trainer.edit(lambda trainer: trainer.set_learning_rate(lr))

    def set_value(self, name: str, value) -> None:
        """Set a learnable hyper-parameter of the running model by name at the next step (an unknown name is refused at
        once)."""
        if self.trainer is not None:
            self.trainer.learnable(name)  # an unknown name is refused at once, with the names there are
            self.trainer.edit(lambda trainer: trainer.set_value(name, value))

    def freeze(self, name: str, frozen: bool) -> None:
        """Freeze or free a learnable hyper-parameter of the running model by name, at the next step."""
        if self.trainer is not None:
            self.trainer.edit(lambda trainer: trainer.freeze(name, frozen))
