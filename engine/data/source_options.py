"""The options of the generated and bundled data sets that take any (sizes, noise, image side): param classes, so
the page builds their fields, the CLI their `--source-option` checks and a run's configuration its JSON from them."""
from __future__ import annotations

import param

__all__ = ["PhotoPatchesOptions", "RectanglesOptions", "Symmetric2dOptions", "TwoMoonsOptions"]


class RectanglesOptions(param.Parameterized):
    """Options of the `rectangles` set (van der Wilk et al., "Convolutional Gaussian Processes", 2017; after Larochelle
    et al., 2007): sizes and image side."""
    num_train = param.Integer(1200, bounds=(1, None),
                              doc="Number of training images (van der Wilk, Rasmussen & Hensman 2017: 1,200).")
    num_test = param.Integer(2000, bounds=(1, None), doc="Number of test images.")
    image_size = param.Integer(28, bounds=(8, 64),
                               doc="Side of the square images in pixels (van der Wilk, Rasmussen & Hensman 2017: 28).")
    min_side_gap = param.Integer(3, bounds=(1, 20), doc=(
        "Smallest |height − width| in pixels; closer pairs are redrawn. 3 is the rule of the Larochelle et al. "
        "(2007) rectangles data that van der Wilk, Rasmussen & Hensman 2017 uses; 1 lets near-squares in (a harder "
        "task)."))


class Symmetric2dOptions(param.Parameterized):
    """Options of the `symmetric-2d` regression set, a function symmetric under swapping x1 and x2 (van der Wilk et al.,
    "Learning Invariances using the Marginal Likelihood", 2018, Fig. 2)."""
    num_train = param.Integer(100, bounds=(1, None), doc="Number of training points.")
    num_test = param.Integer(500, bounds=(1, None), doc="Number of test points.")
    noise = param.Number(0.05, bounds=(0, None), doc="Standard deviation of the Gaussian noise on the targets.")
    one_sided = param.Boolean(False, doc="Draw training points from the half x1 ≥ x2 only (test: whole square).")


class TwoMoonsOptions(param.Parameterized):
    """Options of the `two-moons` set (scikit-learn's make_moons), the semi-supervised example of the RKHS invariance
    paper."""
    num_train = param.Integer(200, bounds=(2, None), doc="Number of training points.")
    num_test = param.Integer(1000, bounds=(1, None), doc="Number of test points.")
    noise = param.Number(0.1, bounds=(0, None), doc="Standard deviation of the Gaussian noise of make_moons.")


class PhotoPatchesOptions(param.Parameterized):
    """Options of the `photo-patches` set: colour patches cut from scikit-learn's two sample photographs, labelled by
    photo."""
    num_train = param.Integer(1000, bounds=(2, None), doc="Number of training patches (half from each photo).")
    num_test = param.Integer(500, bounds=(2, None), doc="Number of test patches (half from each photo).")
    patch_size = param.Integer(16, bounds=(4, 64), doc="Side of the square colour patches in pixels.")
