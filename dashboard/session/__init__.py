"""The training thread of a page: `TrainingSession` around the engine's Trainer (`training`), the commands a page gives
it (`commands`), what its thread hands the page (`outbox`) and what each tick takes from it (`update`), a stored run
opened or followed (`opened_runs`, `follow`), how the pages of one server share the machine (`scheduling`), and every
page's run stopped with a checkpoint when the server stops (`stopping`)."""
from invlab.dashboard.session.follow import RunFollower
from invlab.dashboard.session.scheduling import TrainingSlots
from invlab.dashboard.session.training import TrainingSession
from invlab.dashboard.session.update import Update

__all__ = ["RunFollower", "TrainingSession", "TrainingSlots", "Update"]
