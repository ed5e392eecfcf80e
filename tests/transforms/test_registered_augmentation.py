"""A user's own augmentation with a learnable range, registered with `invlab.transforms.register`: its own
constructor argument is a config setting, and its range is trained, recorded and plotted like the affine ranges
(the augmentation-ranges view, a live control). Runs in its own process so the registration stays there."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = '''\
import torch
from torch import nn

import invlab.transforms
from invlab.transforms import Augmentation, SymmetricRange
from invlab.transforms.base import range_summary, uniform


@invlab.transforms.register("scale_jitter")
class ScaleJitter(Augmentation):
    """x → (1 + s) x with s ~ U[−a, a] and a learned."""

    image_only = False

    def __init__(self, input_shape, init_scale=0.1):
        super().__init__()
        self.ranges = nn.ModuleDict({"scale": SymmetricRange(init_scale, 0.9, name="scale")})

    def sample(self, X, S, generator=None):
        s = 1 + self.ranges["scale"](uniform((X.shape[0], S), X, generator))  # [N, S]
        return X[:, None] * s.reshape(*s.shape, *[1] * (X.dim() - 1))

    def range_values(self):
        return range_summary(self.ranges)


from invlab.train import RunConfig, Trainer  # noqa: E402

trainer = Trainer(RunConfig(model="invariant", data={"dataset": "two-moons"},
                            model_config={"augmentation": "scale_jitter", "init_scale": 0.3, "num_inducing": 10,
                                          "num_samples": 4},
                            train={"steps": 40, "learning_rate": 0.05, "eval_every": 0}))
initial = float(trainer.model.augmentation.range_values()["scale"])
for _ in trainer.run(every=10):
    pass
import json  # noqa: E402

steps, values = trainer.history["range.scale"]
views = trainer.model.diagnostics(None)
print(json.dumps({"initial": initial, "values": values, "views": sorted(views),
                  "covers": list(getattr(views.get("augmentation_history"), "covers", ())),
                  "tunables": [t.name for t in trainer.model.tunables() if "range" in t.name]}))
'''


def test_a_users_learnable_augmentation_trains_and_is_plotted_like_the_affine_ranges(tmp_path):
    script = tmp_path / "scale_jitter.py"
    script.write_text(SCRIPT)
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(root), "INVLAB_DATA": str(tmp_path / "data"),
                              "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    values = got["values"]
    assert len(values) >= 3 and len({round(v, 6) for v in values}) > 1  # the range moved: it is trained
    assert abs(got["initial"] - 0.3) < 1e-9  # built with init_scale=0.3, the augmentation's own setting
    assert "augmentation_history" in got["views"] and "range.scale" in got["covers"]
    assert "kernel.augmentation.ranges.scale.half_width" in got["tunables"]
