"""What a served page may read, as an attacker with a link meets it (`invlab serve --allow-data-dir ALLOWED`): an image
folder inside ALLOWED whose class folder is a symbolic link to another user's images is refused, named as written
(shown as text), and nothing trains on it; another run's checkpoint in the data directory probed as `npz:` is refused
without a word of what it holds; the Data tab's box offers neither.

The server is the test process's shared one (`served_home`, tests/browser/conftest.py), whose ALLOWED is empty as it
starts: the module lays its folders out there, and a checkpoint in the server's data directory under a run id no
other test reaches."""
import os
import time
from urllib.parse import quote

import pytest

from invlab.train import RunStore
from pagekit import TEXT, browser_page, open_tab, poll
from tests.bad_inputs.worlds import setup_image_folder, write_png

OUTSIDE = "resolves outside the folders this server allows"
LINKED = "secret<i>class"  # a folder name that is markup: it must be shown as these characters


@pytest.fixture(scope="module")
def served_with_links(served_home, tmp_path_factory):
    """(the page URL, the server's folder, ALLOWED, the checkpoint, OUTSIDE) with the module's folders laid out: the
    files behind the links lie in OUTSIDE, a folder of the module's own, outside everything the server allows."""
    url, root = served_home
    allowed, outside = root / "allowed", tmp_path_factory.mktemp("outside")
    setup_image_folder(allowed)  # ALLOWED/pics/cat, ALLOWED/pics/dog
    for i in range(6):
        write_png(outside / "privimgs" / f"{i}.png", value=200)
    os.symlink(outside / "privimgs", allowed / "pics" / LINKED)
    (outside / "secret.csv").write_text("a,b,price\n1,2,3\n4,5,6\n")
    os.symlink(outside / "secret.csv", allowed / "prices.csv")
    checkpoint = root / "data" / "checkpoints" / "run_990003" / "step_00000120.pt"
    checkpoint.parent.mkdir(parents=True)
    import torch

    torch.save({"secret_weights": torch.zeros(3)}, checkpoint)
    return url, root, allowed, checkpoint, outside


def _page_text(page) -> str:
    return page.evaluate(TEXT)


def _start_and_read(page, url: str, dataset: str, word: str) -> str:
    """Open the page on a link setting data.dataset, press ▶ Start, and return the page's text once `word` is in it."""
    page.goto(f"{url}?data.dataset={quote(dataset)}&model.num_inducing=5&train.steps=2")
    page.get_by_role("button", name="▶ Start").click()
    return poll(lambda: (lambda t: t if word in t else None)(_page_text(page)), timeout=90)


def test_a_class_folder_linked_outside_is_refused_and_nothing_trains_on_it(served_with_links):
    url, root, allowed, _, outside = served_with_links
    with browser_page() as (page, errors):
        text = _start_and_read(page, url, f"images:{allowed}/pics", OUTSIDE)
        assert f"{allowed}/pics/{LINKED}" in text  # the entry as written, shown as its characters
        assert "privimgs" not in text and str(outside) not in text
        open_tab(page, "Data")
        box = page.locator(".bk-input-group", has_text="Dataset").locator("select").first
        options = poll(lambda: box.locator("option").all_inner_texts(), timeout=60)
        assert not any("/pics" in o or "prices.csv" in o or "outside" in o for o in options), options
        time.sleep(2)  # a run the Start had built would be stored by now
        assert not errors, errors
    with RunStore(root / "data" / "runs.sqlite", create=False) as store:
        assert not [r for r in store.runs.list() if "pics" in r.dataset or "pics" in r.config]


def test_a_checkpoint_probed_as_npz_is_refused_without_its_contents(served_with_links):
    url, _, _, checkpoint, _ = served_with_links
    with browser_page() as (page, errors):
        text = _start_and_read(page, url, f"npz:{checkpoint}", "run store")
        assert "data.pkl" not in text and "secret_weights" not in text and "archive/" not in text
        assert not errors, errors
