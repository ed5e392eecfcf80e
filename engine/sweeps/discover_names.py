"""The names a discover study gives its candidates and its sweep (a leaf module: the study, its report and its second
stage all read them, and none of them imports another to get them)."""
from __future__ import annotations

NONE = "none"  # the baseline's candidate name
COMBINED = "+"  # joins the parts of a combined candidate: "rotation+flips"
BASELINE = "identity"  # the registered orbit that gives it
SWEEP_PREFIX = "discover "  # a discover sweep's stored name: "discover DATASET"


def candidate_name(augmentation: str, coordinates: str | None = None) -> str:
    """The report's name of a registered augmentation: 'none' for the identity orbit, else its registered name, with
    the coordinates of a named group after a colon ('permutations:0,1')."""
    if augmentation == BASELINE:
        return NONE
    return f"{augmentation}:{coordinates}" if coordinates else augmentation


def point_name(point: dict) -> str:
    """The candidate a sweep point trains (its `model.augmentation`, `model.orbit_coordinates` and, for a combination,
    `model.then_augmentation`)."""
    name = candidate_name(str(point.get("model.augmentation")), point.get("model.orbit_coordinates"))
    then = point.get("model.then_augmentation")
    return f"{name}{COMBINED}{then}" if then not in (None, "none") else name
