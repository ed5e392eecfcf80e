"""How a discover study names its candidates to a reader: a group on named coordinates by its data's own column names
('permutations:0,1' → 'permutations: age, height'), wherever a candidate is shown (the verdict, the notes, the
ranking, the terminal and the HTML report). The stored name ('permutations:0,1') stays the candidate's key: it is
what the run's settings hold, and a column name may hold any character (a '+' or a ',')."""
from __future__ import annotations

import functools
import json
import re
from typing import Sequence

from .discover_names import COMBINED


def group_label(candidate: str, input_names: Sequence[str] | None) -> str:
    """`candidate` as a reader sees it: each part's coordinates by their column names when the data names its
    columns ('permutations:0,2+sign_flips' → 'permutations: age, weight+sign_flips'); unchanged otherwise."""
    if not input_names or ":" not in candidate:
        return candidate
    parts = []
    for part in candidate.split(COMBINED):
        name, colon, coordinates = part.partition(":")
        try:
            index = [int(c) for c in coordinates.split(",")] if colon else []
        except ValueError:
            index = []
        if index and all(0 <= i < len(input_names) for i in index):
            part = f"{name}: {', '.join(str(input_names[i]) for i in index)}"
        parts.append(part)
    return COMBINED.join(parts)


def relabel(text: str, labels: dict[str, str]) -> str:
    """`text` (a verdict, a note) with each candidate that names coordinates by its label: the sentences are built
    from the candidates' stored names, so the words that judge them (which helps, which is within noise) stay
    independent of what the columns are called; only whole names are replaced ('permutations:0,1' and never the
    start of 'permutations:0,1,2')."""
    changed = {raw: shown for raw, shown in labels.items() if raw != shown}
    if not changed:
        return text
    pattern = "|".join(re.escape(raw) for raw in sorted(changed, key=len, reverse=True))
    return re.sub(f"(?<![\\w:,])(?:{pattern})(?![\\w:]|,\\S)", lambda m: changed[m.group(0)], text)


def coordinates_of(columns: Sequence[str], input_names: Sequence[str]) -> str:
    """The coordinates text ('0,2') of the named `columns` among the data's `input_names`, in the data's order."""
    wanted = set(columns)
    return ",".join(str(i) for i, name in enumerate(input_names) if name in wanted)


@functools.lru_cache(maxsize=32)
def input_columns(data_json: str) -> tuple[str, ...] | None:
    """The input column names of the data a sweep's data settings (`RunConfig.data` as JSON) name; None for data with
    no names (images, arrays) or data that cannot be read now."""
    from ..data import sources
    from ..train.config import RunConfig

    name = json.loads(data_json).get("dataset")
    if not isinstance(name, str):
        return None
    try:
        if sources.file_path(name) is None and sources.resolve(name).kind != "tabular":
            return None  # a registered image or point set: nothing to load for names it does not have
        dataset = RunConfig(data=json.loads(data_json)).data_config().load()
    except Exception:  # noqa: BLE001 — the candidates are shown by their coordinates; the runs said why the data failed
        return None
    names = getattr(dataset, "feature_names", None)
    return None if not names else tuple(str(n) for n in names)


def labels_of(candidates: Sequence[str], data: dict) -> dict[str, str]:
    """Each of `candidates` by its reader's name for the data settings `data` (the data is read only when a candidate
    names coordinates)."""
    names = None
    if any(":" in c for c in candidates):
        names = input_columns(json.dumps(data, sort_keys=True, default=str))
    return {c: group_label(c, names) for c in candidates}


__all__ = ["coordinates_of", "group_label", "input_columns", "labels_of", "relabel"]
