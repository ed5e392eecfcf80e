"""The model registry: entries declared by the family modules, one data description for every builder, configs
assembled from the shared parameter groups in the order the CLI and the dashboard show."""
import math

import pytest
import torch

from invlab.data import load
from invlab.errors import ConfigError, ShapeError
from invlab.models import REGISTRY, DataInfo, convolutional, dkp, get_model, gwi, invariant, rkhs, svgp
from invlab.models.config import InducingParams, KernelParams, RobustMaxLikelihoodParams, VariationalParams
from invlab.models.convolutional import ConvolutionalConfig, build_conv_invariant
from invlab.models.svgp import SVGPConfig, build_svgp


def test_every_entry_is_declared_by_its_family_module():
    declared = [svgp.SPEC, invariant.SPEC, *convolutional.SPECS, *dkp.SPECS, rkhs.SPEC, gwi.SPEC]
    assert [s.name for s in declared] == list(REGISTRY)
    assert all(get_model(s.name) is s for s in declared)
    with pytest.raises(ConfigError, match="unknown model 'nope'"):
        get_model("nope")


def names(config):
    return [p for p in config.param if p != "name"]


def test_shared_groups_keep_the_order_users_see():
    assert names(SVGPConfig) == names(KernelParams) + names(InducingParams) + names(RobustMaxLikelihoodParams) + \
        names(VariationalParams)
    assert names(SVGPConfig) == ["kernel", "lengthscale", "variance", "ard", "degree", "num_inducing", "learn_inducing",
                                 "likelihood", "noise_variance", "epsilon", "whiten", "mean_field"]
    inv = names(invariant.InvariantConfig)
    assert inv[0] == "augmentation" and inv.index("learn_ranges") < inv.index("kernel")
    assert inv[inv.index("noise_variance") + 1:] == ["recognition_hidden", "whiten", "mean_field"]
    assert names(ConvolutionalConfig)[-5:] == ["likelihood", "noise_variance", "epsilon", "whiten", "q_covariance"]
    assert names(dkp.DKPSVGPConfig)[-4:] == ["likelihood", "noise_variance", "whiten", "mean_field"]


def test_a_family_overrides_only_what_differs():
    inv = invariant.InvariantConfig.param
    assert inv.kernel.doc == "Base kernel k_g on augmented inputs."
    assert inv.kernel.objects == SVGPConfig.param.kernel.objects and inv.kernel.default == "rbf"
    assert inv.lengthscale.allow_None and inv.lengthscale.bounds == (1e-4, 1e4)
    assert inv.likelihood.objects[:3] == ["auto", "gaussian", "polya_gamma"] and "epsilon" not in inv
    assert {"bernoulli", "softmax", "robustmax"} <= set(inv.likelihood.objects)  # any registered likelihood
    conv = ConvolutionalConfig.param
    assert conv.variance.bounds == (1e-5, 1e4) and conv.num_inducing.default == 64
    gram = dkp.DKPSVGPConfig.param
    assert gram.num_inducing.bounds == (2, 5000) and gram.num_inducing.default == 100
    assert gram.whiten.doc == "Parameterise q(u) through v = L⁻¹u." and gram.whiten.default is True


def test_data_info_of_a_dataset():
    digits = load("digits", classes=[3, 5], subset=40)
    info = DataInfo.of(digits)
    assert (info.task, info.num_classes, info.image_shape) == ("classification", 2, (1, 8, 8))
    assert info.class_names == ("3", "5") and info.input_shape == (1, 8, 8) and info.y_std == 1.0
    diabetes = load("diabetes", subset=40)
    info = DataInfo.of(diabetes)
    assert info.task == "regression" and info.image_shape is None and info.y_std == pytest.approx(diabetes.y_std)
    assert info.shape_of(torch.zeros(3, diabetes.X_train.shape[1])) == info.input_shape
    with pytest.raises(ShapeError, match="data description"):
        info.shape_of(torch.zeros(3, 2))


def test_builders_keep_the_description_and_metrics_use_its_scale():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(30, 2, generator=g, dtype=torch.float64)
    y = torch.sin(X[:, 0])
    rmse = {}
    for y_std in (1.0, 3.0):
        info = DataInfo("regression", y_std=y_std)
        model = build_svgp(SVGPConfig(num_inducing=5), X, y, info, generator=torch.Generator().manual_seed(0))
        assert model.data_info is info and model.y_std == y_std and model.image_shape is None
        rmse[y_std] = model.metrics(X, y)["rmse"]
    assert math.isclose(rmse[3.0], 3.0 * rmse[1.0], rel_tol=1e-12)


def test_image_families_refuse_vectors_and_record_the_image_shape():
    X = torch.rand(12, 1, 5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    y = torch.arange(12) % 2
    with pytest.raises(ConfigError, match="needs image data"):
        build_conv_invariant(ConvolutionalConfig(num_inducing=4), X, y, DataInfo("classification", 2))
    info = DataInfo("classification", 2, image_shape=(1, 5, 5), class_names=("a", "b"))
    model = build_conv_invariant(ConvolutionalConfig(num_inducing=4), X, y, info,
                                 generator=torch.Generator().manual_seed(0))
    assert model.image_shape == (1, 5, 5) and model.data_info.class_names == ("a", "b")
