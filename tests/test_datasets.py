import numpy as np

from skstruct.datasets import load_letters


def test_load_letters_matches_documented_shapes():
    d = load_letters()
    assert len(d.X) == len(d.y) == 6877
    assert sum(len(y) for y in d.y) == 52152
    assert all(x.shape == (len(y), 128) for x, y in zip(d.X, d.y))
    assert set(np.unique(d.folds)) == set(range(10))
    assert "".join(d.target_names[d.y[0]]) == d.words[0]
    lengths = np.array([len(y) for y in d.y])
    assert lengths.min() >= 1 and lengths.max() <= 14
