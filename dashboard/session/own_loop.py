"""A stored run that a user's own loop wrote (`invlab.train.watch`), as the page shows it when it is opened: by its own
name, model and data (not the page's default run: a loop that stored no `RunConfig` has the default one stored), with
its step and no step total (the loop's length is its own), only the metrics it logged, and the sentences that say why
the page cannot continue it (it has no checkpoint: the loop is the only thing that trains it)."""
from __future__ import annotations

from dataclasses import dataclass

from invlab.train import RunConfig, RunRecord


@dataclass(frozen=True)
class OwnLoop:
    """Stored run `run_id`, written by a user's loop under `watch(name=name)`: `model` and `dataset` as the loop
    recorded them (its `RunConfig`'s, else its model's class name and its data's name or "-"); `configured`: the loop
    stored the `RunConfig` it was built from, so its settings can be shown in the page's controls."""

    run_id: int
    name: str
    model: str
    dataset: str
    configured: bool

    @classmethod
    def of(cls, record: RunRecord, config: RunConfig) -> "OwnLoop | None":
        """The watched loop that wrote `record` (whose stored settings are `config`); None for a run the lab trained."""
        if record.name is None:  # only `watch` names a run
            return None
        # without a config, `watch` stores the default RunConfig and records the model's class name instead
        return cls(int(record.id), record.name, record.model, record.dataset, configured=record.model == config.model)

    @property
    def title(self) -> str:
        """What the status says is shown: "my-loop (svgp on digits)", or "my-loop (MyGP)" when its data was not
        named."""
        what = self.model if self.dataset in ("", "-") else f"{self.model} on {self.dataset}"
        return f"{self.name} ({what})"

    def opened(self, status: str, step: int) -> str:
        """The message when the run is opened after its loop ended."""
        return (f"opened stored run {self.run_id} '{self.name}' ({status} at step {step}), written by your own loop, "
                "which the page cannot continue: ▶ Start is off. Run the loop again, or ↺ Reset for a new run here.")

    def followed(self, lead: str, writer: str) -> str:
        """The message when the run is opened while its loop (process `writer`) still writes it."""
        return (f"{lead}run {self.run_id} '{self.name}' is still being trained by another process ({writer}), your "
                "own loop: drawn here as it writes. ▶ Start is off; ↺ Reset trains a new run here.")

    def ended(self, status: str, step: int, why: str) -> str:
        """The message when the loop stopped writing the run the page follows (`why`: its stored message, or "")."""
        return (f"run {self.run_id} '{self.name}' is now {status} at step {step}{f' ({why})' if why else ''}: your own "
                "loop wrote it, which the page cannot continue (▶ Start is off; ↺ Reset trains a new run here).")

    @property
    def settings_note(self) -> str | None:
        """What the page's notice says of the controls when the loop stored no settings; None when it did."""
        if self.configured:
            return None
        return (f"Run {self.run_id} '{self.name}' stored no settings (watch(..., config=...) stores them): the Data "
                "and Model tabs keep this page's own, which ↺ Reset trains.")

    @staticmethod
    def layout(history: dict) -> tuple[str, ...]:
        """The curves of a watched run: the metrics it logged (`history`'s names; its loss only when it logged no
        ELBO, which is the loss upside down), never a family's metrics it did not log."""
        names = list(history)
        return tuple(n for n in names if not (n == "loss" and "elbo" in names))
