"""What a model family's registry entry says in words (`ModelSpec.words`, `.metrics`, `.ranges`): its name and
sentence for the family selector, the labels and units of the parts of its loss, and of its learned ranges.

Data, not layout: the dashboard and the CLI read these from the entry, so a family (built in or a plugin's) brings
its own words without any dashboard code. The papers are cited by authors, year and title.
"""
from __future__ import annotations

from dataclasses import dataclass

# The papers the built-in families follow, cited by authors, year and title.
VDW_2018 = "van der Wilk, Bauer, John & Hensman (2018), “Learning Invariances using the Marginal Likelihood”"
VDW_2017 = "van der Wilk, Rasmussen & Hensman (2017), “Convolutional Gaussian Processes”"
ZHANG_2013 = ("Zhang, Lee & Teh (2013), “Learning with Invariance via Linear Functionals on Reproducing Kernel "
              "Hilbert Space”")
AITCHISON_2021 = "Aitchison, Yang & Ober (2021), “Deep Kernel Processes”"
WILD_2022 = ("Wild, Hu & Sejdinovic (2022), “Generalized Variational Inference in Function Spaces: Gaussian "
             "Measures meet Bayesian Deep Learning”")
HENSMAN_2013 = "Hensman, Fusi & Lawrence (2013), “Gaussian Processes for Big Data”"

UNIT_SYMBOLS = {"degrees": "°", "pixels": "px"}  # a range's unit as written after a number or on an axis


def unit_symbol(unit: str) -> str:
    """The short symbol of a range's unit ("degrees" → "°", "pixels" → "px"); "" for a unit without one (such a
    unit is written out in the label instead)."""
    return UNIT_SYMBOLS.get(unit, "")


@dataclass(frozen=True)
class FamilyWords:
    """A family in words: its name as the selector lists it ("invariant GP"), one sentence on what it is, and the
    paper it follows (authors, year, title)."""

    label: str
    sentence: str
    paper: str = ""


@dataclass(frozen=True)
class MetricWords:
    """How a page shows one logged quantity: its axis label in words with units, its plot title, the factor from
    the logged value to the shown one (100: a fraction shown in %), the least y-span drawn (shown units), and
    whether it gets a live curve of its own (False where a model view already shows it: one view per quantity)."""

    label: str
    title: str
    scale: float = 1.0
    min_span: float = 0.0
    curve: bool = True


@dataclass(frozen=True)
class RangeWords:
    """A learned range in words: what it is ("horizontal shift") and its unit's symbol ("°", "px"; "" for none)."""

    label: str
    unit: str = ""


# what a variational family logs every step (`ELBO_TERMS`), in words
ELBO_METRICS = {
    "elbo": MetricWords("ELBO (nats)", "ELBO (evidence lower bound)"),
    "expected_log_lik": MetricWords("expected log-likelihood (nats)", "Expected log-likelihood"),
    "kl": MetricWords("KL(q ‖ p) (nats)", "KL divergence of q(u) from the prior"),
}


__all__ = ["FamilyWords", "MetricWords", "RangeWords", "ELBO_METRICS", "UNIT_SYMBOLS", "unit_symbol", "VDW_2018",
           "VDW_2017", "ZHANG_2013", "AITCHISON_2021", "WILD_2022", "HENSMAN_2013"]
