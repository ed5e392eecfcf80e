"""What a served page may read: every file and folder a data set string makes it read — a class folder or an image
behind a symbolic link, the files of an IDX folder — must resolve inside a folder the server allows (its data
directory, each `invlab serve --allow-data-dir`), and nothing of the run store (its database, its checkpoints) is
ever read as data. The data box offers only what the page may read. Tested as the page loads data: `ServerLimits`
checks a run's configuration before the page builds it, and a headless `Explorer` with those limits."""
import os
from urllib.parse import quote

import numpy as np
import pytest
from panel.io.location import Location

from invlab.dashboard import Explorer
from invlab.dashboard.explorer.user_data import data_choices
from invlab.dashboard.serving.limits import LimitError, ServerLimits
from invlab.data.idx import write_idx
from invlab.train import RunConfig, RunStore
from tests.bad_inputs.worlds import setup_image_folder, write_png

OUTSIDE = "resolves outside the folders this server allows"


def _link(dataset: str) -> str:
    values = {"data.dataset": dataset, "model.num_inducing": 5, "train.steps": 2}
    return "?" + "&".join(f"{k}={quote(str(v))}" for k, v in values.items())


@pytest.fixture
def linked_out(tmp_path):
    """ALLOWED/pics: class folders cat and dog, and secretclass → OUTSIDE/privimgs (six images outside)."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    setup_image_folder(allowed)
    for i in range(6):
        write_png(outside / "privimgs" / f"{i}.png", value=200)
    os.symlink(outside / "privimgs", allowed / "pics" / "secretclass")
    return allowed, outside


def _config(dataset: str) -> RunConfig:
    return RunConfig(data={"dataset": dataset}, model_config={"num_inducing": 5}, train={"steps": 2})


def test_a_class_folder_linked_outside_the_allowed_folders_is_refused_before_it_is_read(linked_out):
    allowed, outside = linked_out
    limits = ServerLimits(data_dirs=(str(allowed),))
    with pytest.raises(LimitError) as refused:
        limits.check(_config(f"images:{allowed}/pics"))
    text = str(refused.value)
    assert repr(f"{allowed}/pics/secretclass") in text and OUTSIDE in text
    assert "privimgs" not in text and str(outside) not in text  # where the link points stays unsaid
    assert refused.value.keys == ["data.dataset"]


def test_an_image_linked_outside_is_refused_and_a_clean_folder_passes(tmp_path):
    allowed = tmp_path / "allowed"
    setup_image_folder(allowed)
    limits = ServerLimits(data_dirs=(str(allowed),))
    limits.check(_config(f"images:{allowed}/pics"))  # nothing links out: allowed
    write_png(tmp_path / "private.png", value=9)
    os.symlink(tmp_path / "private.png", allowed / "pics" / "dog" / "extra.png")
    with pytest.raises(LimitError, match=OUTSIDE) as refused:
        limits.check(_config(f"{allowed}/pics"))  # a bare path to the folder too
    assert repr(f"{allowed}/pics/dog/extra.png") in str(refused.value)


def test_an_idx_file_linked_outside_is_refused(tmp_path):
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "digits").mkdir(parents=True)
    outside.mkdir()
    write_idx(outside / "train-images-idx3-ubyte", np.zeros((20, 8, 8), np.uint8))
    os.symlink(outside / "train-images-idx3-ubyte", allowed / "digits" / "train-images-idx3-ubyte")
    write_idx(allowed / "digits" / "train-labels-idx1-ubyte", np.arange(20, dtype=np.uint8) % 2)
    with pytest.raises(LimitError, match=OUTSIDE) as refused:
        ServerLimits(data_dirs=(str(allowed),)).check(_config(f"idx:{allowed}/digits"))
    assert repr(f"{allowed}/digits/train-images-idx3-ubyte") in str(refused.value)


def test_the_page_refuses_the_linked_folder_and_trains_nothing_on_it(linked_out, tmp_path, wait_until):
    """The page as a server builds it: the link's data set is refused at once (the box goes back to the digits), and
    the same folder chosen on the Data tab is refused by ▶ Start; no run is stored on it."""
    allowed, _ = linked_out
    store = RunStore(tmp_path / "runs.sqlite")
    e = Explorer(store=store, limits=ServerLimits(data_dirs=(str(allowed),)))
    e.read_location(Location(search=_link(f"images:{allowed}/pics")))
    assert OUTSIDE in e.notice and e.data.dataset == "digits"
    e.data.dataset = f"images:{allowed}/pics"  # chosen on the Data tab
    e.start()
    assert e.status.state == "failed" and OUTSIDE in e.status.message, e.status.message
    assert repr(f"{allowed}/pics/secretclass") in e.status.message
    assert e.session.trainer is None
    assert store.runs.list() == []
    e.close()


# -- the run store is never data, and a refused file's contents are never listed ---------------------------------


@pytest.fixture
def data_dir_with_checkpoint(tmp_path):
    data = tmp_path / "data"
    checkpoint = data / "checkpoints" / "run_3" / "step_00000120.pt"
    checkpoint.parent.mkdir(parents=True)
    import torch

    torch.save({"secret_weights": torch.zeros(3)}, checkpoint)  # a zip archive, as an .npz is
    RunStore(data / "runs.sqlite").close()
    return data, checkpoint


@pytest.mark.parametrize("written", ["npz:{data}/checkpoints/run_3/step_00000120.pt", "{data}/runs.sqlite",
                                     "csv:{data}/runs.sqlite", "npz:{data}/checkpoints/../checkpoints/run_3/x.npz",
                                     "images:{data}/checkpoints"])
def test_the_run_stores_files_are_never_read_as_data(data_dir_with_checkpoint, written):
    data, _ = data_dir_with_checkpoint
    dataset = written.format(data=data)
    with pytest.raises(LimitError) as refused:
        ServerLimits(data_dirs=(str(data),)).check(_config(dataset))
    text = str(refused.value)
    assert "run store" in text and "data/" not in text.split("refused:")[1], text  # names no path of the store
    assert "archive/" not in text and "secret_weights" not in text and "data.pkl" not in text


def test_a_checkpoint_probed_on_the_page_lists_nothing_of_it(data_dir_with_checkpoint, tmp_path):
    data, checkpoint = data_dir_with_checkpoint
    e = Explorer(store=RunStore(data / "runs.sqlite"), limits=ServerLimits(data_dirs=(str(data),)))
    e.data.dataset = f"npz:{checkpoint}"
    e.start()
    message = e.status.message
    assert e.status.state == "failed" and "run store" in message, message
    assert "archive" not in message and "data.pkl" not in message and "version" not in message
    e.close()


def test_an_npz_reader_names_no_member_of_a_zip_that_holds_no_arrays(tmp_path):
    """A torch checkpoint in the user's own folder is a zip archive too: the refusal says what it is, and lists no
    member of it (nor reads them)."""
    import torch

    from invlab.data import load
    from invlab.errors import DataError

    path = tmp_path / "model.pt"
    torch.save({"w": torch.zeros(2)}, path)
    with pytest.raises(DataError) as refused:
        load(f"npz:{path}")
    assert "numpy.savez" in str(refused.value) and "data.pkl" not in str(refused.value)


def test_the_data_box_offers_only_what_resolves_inside_the_allowed_folders(linked_out, tmp_path):
    allowed, outside = linked_out
    (outside / "secret.csv").write_text("a,b,price\n1,2,3\n4,5,6\n")
    os.symlink(outside / "secret.csv", allowed / "prices.csv")
    (allowed / "mine.csv").write_text("a,b,price\n1,2,3\n4,5,6\n")
    setup_image_folder(allowed / "clean")
    choices = data_choices(ServerLimits(data_dirs=(str(allowed),)))
    assert f"csv:{(allowed / 'mine.csv').resolve()}" in choices
    assert f"images:{(allowed / 'clean' / 'pics').resolve()}" in choices
    assert not any(str(outside) in c or "prices.csv" in c for c in choices), choices  # no resolved outside path
    assert not any(c.startswith("images:") and c.endswith("/allowed/pics") for c in choices), choices


def test_a_sweep_over_a_folder_linked_outside_is_refused_before_any_run(linked_out, tmp_path):
    """The Compare page's sweep may vary data.dataset: each planned run is checked as ▶ Start checks one."""
    allowed, _ = linked_out
    store = RunStore(tmp_path / "runs.sqlite")
    e = Explorer(store=store, limits=ServerLimits(data_dirs=(str(allowed),)))
    e.__panel__()
    spec = e.compare.spec_from_settings("data.dataset", [f"images:{allowed}/pics"], 1)
    e.compare.launch(spec)
    assert OUTSIDE in e.compare.form.form_error_text, e.compare.form.form_error_text
    assert not e.compare.busy() and store.runs.list() == []
    e.close()
