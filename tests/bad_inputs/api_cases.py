"""The API calls of the published list: each case raises the engine's own error, whose message says `API[case][1]`."""

import os
import sys
from pathlib import Path

import numpy as np

# -- the API -------------------------------------------------------------------------------------------------------


def _digits_trainer(**model):
    from invlab.train import RunConfig, Trainer

    config = RunConfig(data={"dataset": "digits", "subset": 60}, model_config={"num_inducing": 10, **model},
                       train={"steps": 1, "eval_every": 0})
    return Trainer(config)


def _nan_images(n=3, where=((0, 0, 1, 1),)):
    X = np.zeros((n, 1, 8, 8))
    for index in where:
        X[index] = np.nan
    return X


def api_load_subset_bool():
    from invlab.data import load

    load("digits", subset=True)


def api_load_test_subset_bool():
    from invlab.data import load

    load("digits", test_subset=False)


def api_load_seed_bool():
    from invlab.data import load

    load("digits", seed=True)


def api_load_num_train_bool():
    from invlab.data import load

    load("two-moons", num_train=True)


def api_load_noise_inf():
    from invlab.data import load

    load("two-moons", noise=float("inf"))


def api_load_name_not_str():
    from invlab.data import load

    load(7)


def api_load_classes_str():
    from invlab.data import load

    load("digits", classes="4,9")


def api_dataset_nan_train():
    from invlab.data import Dataset

    X = np.zeros((10, 2))
    X[3, 1] = np.nan
    Dataset("toy", X, np.arange(10) % 2, np.zeros((4, 2)), np.arange(4) % 2, num_classes=2)


def api_dataset_inf_test():
    from invlab.data import Dataset

    X = np.zeros((4, 2))
    X[0, 0] = X[2, 1] = np.inf
    Dataset("toy", np.zeros((10, 2)), np.arange(10) % 2, X, np.arange(4) % 2, num_classes=2)


def api_dataset_nan_target():
    from invlab.data import Dataset

    y = np.zeros(10)
    y[5] = np.nan
    Dataset("toy", np.zeros((10, 2)), y, np.zeros((4, 2)), np.zeros(4), task="regression")


def api_dataset_text_inputs():
    from invlab.data import Dataset

    Dataset("toy", np.array([["a", "b"]] * 4), np.arange(4) % 2, np.zeros((2, 2)), np.arange(2) % 2, num_classes=2)


def api_runconfig_data_str():
    from invlab.train import RunConfig

    RunConfig(data="digits").validate()


def api_runconfig_train_list():
    from invlab.train import RunConfig

    RunConfig(train=[("steps", 3)]).validate()


def api_runconfig_steps_bool():
    from invlab.train import RunConfig

    RunConfig(train={"steps": True}).validate()


def api_runconfig_num_inducing_bool():
    from invlab.train import RunConfig

    RunConfig(model_config={"num_inducing": True}).validate()


def api_runconfig_subset_bool():
    from invlab.train import RunConfig

    RunConfig(data={"dataset": "digits", "subset": True}).validate()


def api_runconfig_unknown_model():
    from invlab.train import RunConfig

    RunConfig(model="resnet").validate()


def api_runconfig_from_bad_json():
    from invlab.train import RunConfig

    RunConfig.from_json("{not json")


def api_trainer_on_dataset_with_nan():
    from invlab.data import load
    from invlab.train import RunConfig, Trainer

    ds = load("digits", subset=60)
    ds.X_train[5, 0, 3, 3] = np.nan  # changed after loading
    Trainer(RunConfig(model_config={"num_inducing": 10}, train={"steps": 1}), dataset=ds)


def api_limits_memory_nan():
    from invlab.dashboard.serving.limits import ServerLimits

    ServerLimits.from_env({"INVLAB_MAX_MEMORY_MB": "nan"})


def api_limits_memory_inf():
    from invlab.dashboard.serving.limits import ServerLimits

    ServerLimits.from_env({"INVLAB_MAX_MEMORY_MB": "inf"})


def api_sweep_spec_too_many_seeds():
    from invlab.sweeps import SweepSpec

    SweepSpec.from_dict({"seeds": 10**9})


def api_dataframe_unknown_target():
    import pandas as pd

    from invlab.data import load

    load(pd.DataFrame({"area": [1.0, 2.0, 3.0, 4.0], "price": [1.0, 2.0, 3.0, 5.0]}), target="cost")


def api_arrays_test_without_labels():
    from invlab.data import load

    load((np.zeros((8, 2)), np.arange(8) % 2), X_test=np.zeros((2, 2)))


def api_parquet_without_pyarrow():
    import tempfile

    from invlab.data import load

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "table.parquet"
        path.write_bytes(b"PAR1" + bytes(64) + b"PAR1")
        saved = sys.modules.get("pyarrow")
        sys.modules["pyarrow"] = None  # as if it were not installed
        try:
            load(f"parquet:{path}")
        finally:
            if saved is None:
                del sys.modules["pyarrow"]
            else:
                sys.modules["pyarrow"] = saved


def _circles_checkpoint(tmp: Path):
    from sklearn.datasets import make_circles

    from invlab.data import Dataset
    from invlab.train import RunConfig, Trainer

    X, y = make_circles(80, noise=0.05, factor=0.5, random_state=0)
    ds = Dataset("circles", X[:60], y[:60], X[60:], y[60:], num_classes=2)
    trainer = Trainer(RunConfig(model_config={"num_inducing": 8}, train={"steps": 1, "eval_every": 0}), dataset=ds)
    trainer.step()
    return trainer.save_checkpoint(tmp / "circles.pt")


def api_checkpoint_hand_built_data():
    import tempfile

    from invlab.train import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        Trainer.from_checkpoint(_circles_checkpoint(Path(tmp)))


def api_checkpoint_other_input_shape():
    import tempfile

    from invlab.data import load
    from invlab.train import Trainer

    with tempfile.TemporaryDirectory() as tmp:
        Trainer.from_checkpoint(_circles_checkpoint(Path(tmp)), dataset=load("wine"))


def api_page_file_outside_data_dirs():
    from invlab.dashboard.serving.limits import ServerLimits
    from invlab.train import RunConfig

    ServerLimits(data_dirs=("/srv/lab-data",)).check(RunConfig(data={"dataset": "csv:/etc/hosts.csv"}))


def api_page_bare_path_outside_data_dirs():
    from invlab.dashboard.serving.limits import ServerLimits
    from invlab.train import RunConfig

    ServerLimits(data_dirs=("/srv/lab-data",)).check(RunConfig(data={"dataset": "/home/someone/private.csv"}))


def api_page_file_over_limit():
    import tempfile

    from invlab.dashboard.serving.limits import ServerLimits
    from invlab.train import RunConfig

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.csv"
        path.write_text("a,b,y\n" + "1.0,2.0,3.0\n" * 200_000)  # 2.3 MB
        ServerLimits(max_memory_mb=1, data_dirs=(tmp,)).check(RunConfig(data={"dataset": f"csv:{path}"}))


def api_store_run_of_another_user():
    import tempfile

    from invlab.train import RunStore

    with tempfile.TemporaryDirectory() as tmp:
        with RunStore(Path(tmp) / "runs.sqlite", owner="alice") as alice:
            run = alice.runs.create("{}", "svgp", "digits")
        with RunStore(Path(tmp) / "runs.sqlite", owner="bob") as bob:
            bob.runs.get(run)


def api_server_admins_not_a_list():
    from invlab.dashboard.serving.limits import ServerLimits

    ServerLimits.from_env({"INVLAB_ADMINS": "lecturer"})


def api_register_kernel_name_clash():
    import invlab.kernels

    @invlab.kernels.register("rbf")
    class MyRBF(invlab.kernels.Stationary):
        pass


def api_register_augmentation_name_clash():
    import invlab.transforms

    @invlab.transforms.register("rotation")
    class MyRotation(invlab.transforms.FiniteOrbit):
        orbit_size = 2


def api_register_model_name_clash():
    from invlab.models import ModelSpec, SVGPConfig, register

    def build_my_svgp(config, X, y, info, *, generator=None):
        raise AssertionError("never built")

    register(ModelSpec("svgp", SVGPConfig, build_my_svgp))


def api_check_kernel_not_psd():
    from invlab.kernels import Stationary
    from invlab.testing import check_kernel

    class NotPSD(Stationary):
        def K_r2(self, r2):
            return 1.0 - r2

    check_kernel(NotPSD(5))


def api_watch_read_only_data_dir():
    import tempfile

    from invlab.train import watch

    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o555)
        try:
            watch(name="my-loop", data_dir=tmp)
        finally:
            os.chmod(tmp, 0o755)


def api_watch_without_a_name():
    from invlab.train import watch

    watch(name=" ")


API = {
    "watch-read-only-data-dir": (api_watch_read_only_data_dir, ("is read-only", "'my-loop'", "chmod u+w",
                                                                "data_dir=")),
    "watch-without-a-name": (api_watch_without_a_name, ("watch needs a name", "name='my-loop'")),
    "store-run-of-another-user": (api_store_run_of_another_user, ("run 1 belongs to another user",)),
    "server-admins-not-a-list": (api_server_admins_not_a_list, ("INVLAB_ADMINS", "--admin")),
    "load-subset-bool": (api_load_subset_bool, ("subset", "True")),
    "load-test-subset-bool": (api_load_test_subset_bool, ("test_subset",)),
    "load-seed-bool": (api_load_seed_bool, ("seed",)),
    "load-num-train-bool": (api_load_num_train_bool, ("num_train",)),
    "load-noise-inf": (api_load_noise_inf, ("noise",)),
    "load-name-not-str": (api_load_name_not_str, ("string",)),
    "load-classes-str": (api_load_classes_str, ("classes",)),
    "dataset-nan-train": (api_dataset_nan_train, ("X_train", "1 non-finite", "(3, 1)")),
    "dataset-inf-test": (api_dataset_inf_test, ("X_test", "2 non-finite")),
    "dataset-nan-target": (api_dataset_nan_target, ("y_train", "1 non-finite")),
    "dataset-text-inputs": (api_dataset_text_inputs, ("X_train", "numbers")),
    "runconfig-data-str": (api_runconfig_data_str, ("data", "dict", "{'dataset': 'digits'}")),
    "runconfig-train-list": (api_runconfig_train_list, ("train", "dict")),
    "runconfig-steps-bool": (api_runconfig_steps_bool, ("steps", "True")),
    "runconfig-num-inducing-bool": (api_runconfig_num_inducing_bool, ("num_inducing", "True")),
    "runconfig-subset-bool": (api_runconfig_subset_bool, ("subset", "True")),
    "runconfig-unknown-model": (api_runconfig_unknown_model, ("resnet",)),
    "runconfig-bad-json": (api_runconfig_from_bad_json, ("configuration",)),
    "trainer-dataset-nan": (api_trainer_on_dataset_with_nan, ("X_train", "1 non-finite")),
    "limits-memory-nan": (api_limits_memory_nan, ("INVLAB_MAX_MEMORY_MB", "finite")),
    "limits-memory-inf": (api_limits_memory_inf, ("INVLAB_MAX_MEMORY_MB", "finite")),
    "sweep-spec-too-many-seeds": (api_sweep_spec_too_many_seeds, ("1,000,000,000 runs",)),
    "dataframe-unknown-target": (api_dataframe_unknown_target, ("no column 'cost'", "'price'")),
    "arrays-test-without-labels": (api_arrays_test_without_labels, ("X_test and y_test",)),
    "parquet-without-pyarrow": (api_parquet_without_pyarrow, ("pip install pyarrow",)),
    "checkpoint-hand-built-data": (api_checkpoint_hand_built_data, ("hand-built dataset 'circles'", "dataset=")),
    "checkpoint-other-input-shape": (api_checkpoint_other_input_shape, ("other inputs", "'circles'", "wine")),
    "page-file-outside-data-dirs": (api_page_file_outside_data_dirs, ("--allow-data-dir",)),
    "page-bare-path-outside-data-dirs": (api_page_bare_path_outside_data_dirs, ("--allow-data-dir",)),
    "page-file-over-limit": (api_page_file_over_limit, ("2 MB", "--max-memory-mb")),
    "register-kernel-name-clash": (api_register_kernel_name_clash, (
        "kernel name 'rbf' is taken by the built-in kernel invlab.kernels.stationary.RBF", "MyRBF",
        "under another name")),
    "register-augmentation-name-clash": (api_register_augmentation_name_clash, (
        "augmentation name 'rotation' is taken by the built-in augmentation invlab.transforms.rotation",
        "MyRotation")),
    "register-model-name-clash": (api_register_model_name_clash, (
        "model name 'svgp' is taken by the built-in model family invlab.models.svgp.build_svgp", "build_my_svgp")),
    "check-kernel-not-psd": (api_check_kernel_not_psd, ("kernel NotPSD fails the kernel contract: PSD:", "eigenvalue")),
}
