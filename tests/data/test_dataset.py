"""`Dataset`'s repr says what a data set is (name, task, sizes, input shape, classes) in one line, not its arrays."""
import numpy as np

from invlab.data import Dataset


def images(n: int) -> np.ndarray:
    return np.random.default_rng(0).random((n, 1, 28, 28))


def test_repr_of_an_image_classification_set_names_its_sizes_and_shapes_in_one_line():
    ds = Dataset("mnist", images(5000), np.arange(5000) % 10, images(1000), np.arange(1000) % 10,
                 num_classes=10, image_shape=(1, 28, 28))
    text = repr(ds)
    assert text == ("Dataset(name='mnist', task='classification', num_train=5000, num_test=1000, "
                    "input_shape=(1, 28, 28), num_classes=10)")
    assert "array" not in text and "\n" not in text


def test_repr_of_a_regression_set_has_no_classes():
    rng = np.random.default_rng(1)
    ds = Dataset("diabetes", rng.random((332, 10)), rng.random(332), rng.random((110, 10)), rng.random(110),
                 task="regression", y_mean=152.0, y_std=77.0)
    assert repr(ds) == "Dataset(name='diabetes', task='regression', num_train=332, num_test=110, input_shape=(10,))"
