from importlib import resources

import numpy as np
from sklearn.utils import Bunch


def _open(name):
    return np.load(resources.files(__package__).joinpath("data", name))


def load_letters():
    """The OCR letters data set: handwritten words as chains of letter images.

    6877 words (52152 letters) by 150 writers; each letter a 16x8 binary
    image; labels the letters ``'a'..'z'``; the first (capital) letter of
    each word was removed in the original data.  See
    ``skstruct/datasets/data/PROVENANCE.md``.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X``: list of 6877 float64 arrays of shape (n_letters_i, 128), the
        pixels of each letter in row-major order (``reshape(16, 8)``);
        ``y``: list of 6877 int64 arrays of letter codes 0..25;
        ``folds``: int64 array (6877,), the standard 10-fold split (0..9);
        ``words``: array of str, each word spelled out;
        ``target_names``: the 26 letters.
    """
    with _open("ocr_letters.npz") as f:
        pixels = f["pixels"].astype(np.float64)
        labels = f["labels"]
        lengths = f["lengths"]
        folds = f["folds"]
        words = f["words"]
    cut = np.cumsum(lengths)[:-1]
    return Bunch(
        X=np.split(pixels, cut),
        y=np.split(labels, cut),
        folds=folds,
        words=words,
        target_names=np.array(list("abcdefghijklmnopqrstuvwxyz")),
    )
