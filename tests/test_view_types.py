"""A view type of a plugin's (a dataclass subclass of `invlab.diagnostics.View`) registered with
`invlab.view_codec.register_view_type` is stored with a run and read back as itself, like the engine's own; one not
registered is refused by name, and a second type under a registered name is refused."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from invlab import diagnostics as dg
from invlab.errors import ConfigError
from invlab.registry import snapshot
from invlab.view_codec import ViewCodecError, decode_view, encode_view


@dataclass
class Counts(dg.View):
    """Counts over bins: a view type the engine does not ship."""

    counts: np.ndarray = None


def test_a_registered_view_type_is_stored_and_read_back_as_itself():
    from invlab.view_codec import register_view_type

    saved = snapshot()
    try:
        register_view_type(Counts)
        kind, payload = encode_view(Counts(title="bins", counts=np.array([3.0, 1.0])))
        back = decode_view(payload)
        assert kind == "Counts" and isinstance(back, Counts) and back.counts.tolist() == [3.0, 1.0]
        with pytest.raises(ConfigError, match="view type name 'Counts' is taken"):
            register_view_type(type("Counts", (dg.View,), {}))
    finally:
        saved.restore()
    with pytest.raises(ViewCodecError, match="Counts is not one of the view types"):
        encode_view(Counts(title="bins", counts=np.zeros(2)))
