"""`images:DIR`: a folder of class folders, `DIR/<class_name>/*.png|jpg|...`, read with Pillow.

Each class folder is one class (named by the folder, in sorted order). Images of different sizes are resized to
`image_size` (or, when 0, to the most common size, with a note); unreadable files are skipped and counted in a
note (all of them unreadable is refused). A folder of grey images gives one channel, otherwise three; `grayscale`
forces one. Values are in [0, 1].
"""
from __future__ import annotations

import os
import re
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import param

from ..errors import DataError
from .files import file_info
from .raw import RawData

# The most pixels one image may have. A lab data set's images are small (MNIST is 28×28, a photo patch a few
# hundred pixels square); a file over this is skipped from its header alone, before a byte is decoded, because a
# few hundred KB of PNG can declare 20000×20000 pixels (400 MB grey, 1.2 GB RGB once decoded). Pillow's own limit
# (89 M pixels, a warning; twice that, an error) is far above what a lab needs and would still decode ~0.7 GB.
MAX_IMAGE_PIXELS = 4096 * 4096  # 16,777,216
IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


class ImageFolderOptions(param.Parameterized):
    """Options of an image folder."""

    image_size = param.Integer(0, bounds=(0, 512),
                               doc="Resize every image to this many pixels square; 0: keep the size (images of "
                                   "different sizes are resized to the most common one, with a note).")
    grayscale = param.Boolean(False, doc="Convert to one grey channel; otherwise colour images keep three.")


def class_folders(directory: Path) -> list[Path]:
    """The class folders `images:DIR` reads: its sub-folders not hidden, in sorted order (a server checks each of
    them, and then `image_files` of each, before anything is read)."""
    return sorted(d for d in directory.iterdir() if d.is_dir() and not d.name.startswith("."))


def image_files(folder: Path) -> list[Path]:
    """The image files of one class folder that `images:DIR` reads (by extension), sorted."""
    return sorted(f for f in folder.iterdir() if f.is_file() and f.suffix.lower() in IMAGE_EXTENSIONS)


def holds_class_folders(folder: Path) -> bool:
    """Whether `folder` is laid out for `images:DIR`: at least two class folders with images in them (how a bare
    folder path and a listing of the user's files recognise it)."""
    classes = [d for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")]
    return sum(any(f.suffix.lower() in IMAGE_EXTENSIONS for f in d.iterdir() if f.is_file()) for d in classes) >= 2


def _class_folders(directory: Path, where: str) -> list[tuple[str, list[Path]]]:
    if not directory.exists():
        raise DataError(f"images: folder {where} does not exist; check the path.")
    if not directory.is_dir():
        raise DataError(f"images: {where} is a file, not a folder; give a folder with one sub-folder of images per "
                        "class.")
    classes = [(sub.name, files) for sub in class_folders(directory) if (files := image_files(sub))]
    if not classes:
        loose = any(f.suffix.lower() in IMAGE_EXTENSIONS for f in directory.iterdir() if f.is_file())
        raise DataError(f"images: {where} has no class folders with images"
                        + (" (its images lie directly in it)" if loose else "") + "; put each class's images in "
                        "its own sub-folder, DIR/<class_name>/*.png.")
    if len(classes) == 1:
        raise DataError(f"images: {where} has one class folder only ({classes[0][0]!r}); classification needs at "
                        "least two — add a folder per class.")
    return classes


def read_image_folder(directory: str, options: dict, notes: list):
    """`images:DIR` -> RawData of [N, C, H, W] images in [0, 1] with the class folders' names."""
    path = Path(os.path.expanduser(directory))
    classes = _class_folders(path, directory)
    images, labels, skipped, too_large = _open_images(classes)
    why = ""
    if too_large:
        one = len(too_large) == 1
        why = (f"{len(too_large)} {'is' if one else 'are'} too large to decode: {', '.join(too_large[:3])}"
               f"{', …' if len(too_large) > 3 else ''}, more than the {MAX_IMAGE_PIXELS:,} pixels an image may "
               f"have — shrink {'it' if one else 'them'}")
    if not images:
        raise DataError(f"images: none of the {len(skipped)} image files in {directory} can be read; "
                        + (f"{why}." if len(too_large) == len(skipped) else
                           f"{why}; the others are corrupt or not images." if why else
                           "they are corrupt or not images."))
    if skipped:
        notes.append(f"images: skipped {len(skipped)} unreadable file{'s' if len(skipped) > 1 else ''} in "
                     f"{directory} ({', '.join(skipped[:3])}{', …' if len(skipped) > 3 else ''})"
                     + (f"; {why}" if why else ""))
    grey = options.get("grayscale") or all(im.mode in ("1", "L", "LA", "I", "I;16", "F") for im in images)
    X = _stacked(images, grey, options.get("image_size") or 0, directory, notes)
    raw = RawData(X, np.asarray(labels, dtype=np.int64), class_names=[name for name, _ in classes],
                  task="classification", kind="image")
    raw.metadata["file"] = file_info(path)
    raw.metadata["file"]["mtime"] = max(f.stat().st_mtime for _, files in classes for f in files)
    return raw


def _open_images(classes: list) -> tuple[list, list, list, list]:
    """Every readable image of the class folders, decoded: (images, their class indices, the names of files
    skipped, the too-large ones with their sizes). Sizes are read from the header before anything is decoded."""
    from PIL import Image, UnidentifiedImageError

    images, labels, skipped, too_large = [], [], [], []
    with warnings.catch_warnings():
        # the size is checked against our own, lower limit below; Pillow's warning would only repeat it, raw
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        for label, (_, files) in enumerate(classes):
            for f in files:
                where = f"{f.parent.name}/{f.name}"  # with its class: two classes may hold a 0.png each
                try:
                    with Image.open(f) as im:  # lazy: reads the header (the size), decodes nothing yet
                        if im.width * im.height > MAX_IMAGE_PIXELS:
                            too_large.append(f"{where} ({im.width}×{im.height} = {im.width * im.height:,} pixels)")
                            skipped.append(f.name)
                            continue
                        im.load()
                        images.append(im.copy())
                    labels.append(label)
                except Image.DecompressionBombError as err:  # over twice Pillow's limit: refused by Image.open
                    pixels = re.search(r"\((\d+) pixels\)", str(err))
                    too_large.append(f"{where} ({int(pixels.group(1)):,} pixels)" if pixels else where)
                    skipped.append(f.name)
                except (UnidentifiedImageError, OSError, ValueError, SyntaxError):
                    skipped.append(f.name)
    return images, labels, skipped, too_large


def _stacked(images: list, grey: bool, size: int, directory: str, notes: list) -> np.ndarray:
    """The images as one [N, C, H, W] float array in [0, 1] (C = 1 grey, 3 colour), each resized to `size`² or,
    with size 0, to the most common size (said in `notes` when sizes differed)."""
    from PIL import Image

    mode = "L" if grey else "RGB"
    sizes = Counter(im.size for im in images)
    if size:
        target = (size, size)
    else:
        target = sizes.most_common(1)[0][0]
        if len(sizes) > 1:
            notes.append(f"images: {directory} holds images of {len(sizes)} sizes; all were resized to "
                         f"{target[0]}×{target[1]} (the most common; set image_size to choose)")
    arrays = []
    for im in images:
        im = im.convert(mode)
        if im.size != target:
            im = im.resize(target, Image.BILINEAR)
        arrays.append(np.asarray(im, dtype=np.uint8))
    X = np.stack(arrays).astype(np.float64) / 255.0  # [N, H, W] or [N, H, W, 3]
    return X[:, None] if grey else X.transpose(0, 3, 1, 2)  # [N, C, H, W]
