import io

import numpy as np
import pytest

from skstruct.datasets import conll_features, load_conll, load_letters, load_scene, load_snakes
from skstruct.datasets._load import _snake_node_features


def test_load_letters_matches_documented_shapes():
    d = load_letters()
    assert len(d.X) == len(d.y) == 6877
    assert sum(len(y) for y in d.y) == 52152
    assert all(x.shape == (len(y), 128) for x, y in zip(d.X, d.y))
    assert set(np.unique(d.folds)) == set(range(10))
    assert "".join(d.target_names[d.y[0]]) == d.words[0]
    lengths = np.array([len(y) for y in d.y])
    assert lengths.min() >= 1 and lengths.max() <= 14


# ---------------------------------------------------------------- scene


def test_load_scene_shapes():
    d = load_scene()
    assert d.X_train.shape == (1211, 294) and d.X_test.shape == (1196, 294)
    assert d.y_train.shape == (1211, 6) and d.y_test.shape == (1196, 6)
    assert d.X_train.dtype == np.float64 and d.y_train.dtype == np.int64
    assert set(np.unique(d.y_train)) == {0, 1}
    assert list(d.target_names) == ["beach", "sunset", "fall foliage", "field", "mountain",
                                    "urban"]


# ---------------------------------------------------------------- snakes


@pytest.fixture(scope="module")
def snakes():
    return load_snakes()


def test_load_snakes_shapes_labels_and_edges(snakes):
    assert snakes.n_classes == 11
    for split, n in (("train", 200), ("test", 100)):
        X, y = snakes[f"X_{split}"], snakes[f"y_{split}"]
        images, shapes = snakes[f"images_{split}"], snakes[f"shapes_{split}"]
        assert len(X) == len(y) == len(images) == shapes.shape[0] == n
        for (f, e, ef), yi, im, (h, w) in zip(X, y, images, shapes):
            assert im.shape == (h, w, 3) and im.dtype == np.uint8
            assert f.shape == (h * w, 45) and f.dtype == np.float64
            n_edges = h * (w - 1) + (h - 1) * w
            assert e.shape == (n_edges, 2) and e.dtype == np.int64
            assert ef.shape == (n_edges, 180) and ef.dtype == np.float64
            assert yi.shape == (h * w,) and yi.dtype == np.int64
            # Grid edges join pixels one column or one row apart, right edges first.
            step = e[:, 1] - e[:, 0]
            assert np.all(e >= 0) and np.all(e < h * w)
            assert np.all(step[:h * (w - 1)] == 1) and np.all(step[h * (w - 1):] == w)
            assert np.all(e[:h * (w - 1), 0] % w < w - 1)
            assert np.array_equal(np.unique(yi), np.arange(11))
            # Every window holds exactly one colour per slot.
            assert np.all(f.reshape(-1, 5, 9).sum(axis=1) == 1)


def _window_reference(image):
    """The 3x3-window features, pixel by pixel (slot order as in pystruct)."""
    colours = [1, 2, 3, 4, 6]
    slots = [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 1), (1, 0), (-1, 1), (0, 1), (0, 0)]
    h, w, _ = image.shape
    out = np.zeros((h * w, 5, 9))
    for r in range(h):
        for c in range(w):
            for s, (dr, dc) in enumerate(slots):
                rr, cc = r + dr, c + dc
                if 0 <= rr < h and 0 <= cc < w:
                    code = int(image[rr, cc, 0] // 255 + 2 * (image[rr, cc, 1] // 255)
                               + 4 * (image[rr, cc, 2] // 255))
                    out[r * w + c, colours.index(code), s] = 1
                else:
                    out[r * w + c, 3, s] = 1  # outside the image reads as background
    return out.reshape(h * w, 45)


def test_snake_node_features_match_a_pixel_by_pixel_reference(snakes):
    for k in (0, 1, 57):
        np.testing.assert_array_equal(snakes.X_train[k][0],
                                      _window_reference(snakes.images_train[k]))
    np.testing.assert_array_equal(snakes.X_test[3][0], _window_reference(snakes.images_test[3]))


def test_snake_features_on_a_hand_checked_image():
    # A 2x2 image: red (code 1) at (0, 0), blue background elsewhere.
    image = np.zeros((2, 2, 3), np.uint8)
    image[..., 2] = 255
    image[0, 0] = [255, 0, 0]
    f = _snake_node_features([image]).reshape(4, 5, 9)
    # Pixel (0, 0): itself red; its right (slot 7), down (5) and down-right (4)
    # neighbours are background; the up/left slots fall outside and read background.
    assert f[0, :, 8].tolist() == [1, 0, 0, 0, 0]
    for slot in range(8):
        assert f[0, :, slot].tolist() == [0, 0, 0, 1, 0]
    # Pixel (1, 1) sees the red pixel up-left (slot 0), everything else background.
    assert f[3, :, 0].tolist() == [1, 0, 0, 0, 0]
    assert f[3, 3, 1:].tolist() == [1] * 8
    # Pixel (0, 1) sees it on the left (slot 1), pixel (1, 0) above (slot 3).
    assert f[1, 0, 1] == 1 and f[2, 0, 3] == 1
    assert f.reshape(4, 45)[0, 0 * 9 + 8] == 1  # column colour * 9 + slot


def test_snake_edge_feature_options(snakes):
    (f, e, ef), (h, w) = snakes.X_train[0], snakes.shapes_train[0]
    blocks = ef.reshape(-1, 45, 4)
    np.testing.assert_array_equal(blocks[:, :, 0], f[e[:, 0]])
    np.testing.assert_array_equal(blocks[:, :, 1], f[e[:, 1]])
    assert not blocks[:, :, 2:].any()  # the layout of pystruct's example before 2018
    d = load_snakes(edge_features="direction")
    fd, ed, efd = d.X_train[0]
    np.testing.assert_array_equal(fd, f)
    np.testing.assert_array_equal(ed, e)
    n_right = h * (w - 1)
    assert efd.shape == (len(e), 2)
    assert np.all(efd[:n_right] == [1, 0]) and np.all(efd[n_right:] == [0, 1])
    plain = load_snakes(edge_features=None)
    assert all(len(s) == 2 for s in plain.X_test)
    with pytest.raises(ValueError, match="edge_features must be"):
        load_snakes(edge_features="informative")



def test_snake_directional_edge_features_put_vertical_edges_in_slots_2_and_3(snakes):
    d = load_snakes(edge_features="neighbours_directional")
    for split, k in (("train", 0), ("train", 123), ("test", 7)):
        (f, e, ef), (h, w) = d[f"X_{split}"][k], d[f"shapes_{split}"][k]
        n_right = h * (w - 1)
        blocks = ef.reshape(-1, 45, 4)
        np.testing.assert_array_equal(blocks[:n_right, :, 0], f[e[:n_right, 0]])
        np.testing.assert_array_equal(blocks[:n_right, :, 1], f[e[:n_right, 1]])
        assert not blocks[:n_right, :, 2:].any()
        np.testing.assert_array_equal(blocks[n_right:, :, 2], f[e[n_right:, 0]])
        np.testing.assert_array_equal(blocks[n_right:, :, 3], f[e[n_right:, 1]])
        assert not blocks[n_right:, :, :2].any()
        # the same node features and edges as the other layouts
        old = snakes[f"X_{split}"][k]
        np.testing.assert_array_equal(f, old[0])
        np.testing.assert_array_equal(e, old[1])
    # values read off the arrays pystruct 0.3.2's examples/plot_snakes.py builds from its
    # own copy of the data: the first horizontal and the first vertical edge of training
    # image 0, and the column sums of slots 0..3 for two images
    (f, e, ef) = d.X_train[0]
    assert ef.shape == (71, 180) and int(np.sum(e[:, 1] - e[:, 0] == 1)) == 35
    assert np.flatnonzero(ef[0]).tolist() == [53, 88, 93, 108, 109, 112, 113, 116, 117, 120,
                                              121, 128, 132, 133, 136, 137, 140, 141]
    assert np.flatnonzero(ef[35]).tolist() == [19, 90, 103, 110, 111, 114, 115, 118, 119, 122,
                                               123, 130, 131, 134, 135, 138, 142, 143]
    assert ef.reshape(-1, 45, 4).sum(axis=(0, 1)).tolist() == [315.0, 315.0, 324.0, 324.0]
    assert d.X_test[7][2].reshape(-1, 45, 4).sum(axis=(0, 1)).tolist() == [252.0, 252.0,
                                                                           270.0, 270.0]


# ---------------------------------------------------------------- CoNLL

CONLL_TEXT = """-DOCSTART- -X- O

Confidence NN B-NP
in IN B-PP
the DT B-NP
Pound NNP I-NP

He PRP B-NP
RAN VBD B-VP


1999 CD B-NP
"""


def test_load_conll_small_file(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(CONLL_TEXT)
    d = load_conll(path)
    assert d.n_columns == 3
    assert [len(t) for t in d.tokens] == [4, 2, 1]
    assert d.tokens[0].shape == (4, 2) and d.tokens[0][3].tolist() == ["Pound", "NNP"]
    assert d.y[1].tolist() == ["B-NP", "B-VP"]
    assert d.y[2].tolist() == ["B-NP"]
    (path.parent / "bad.txt").write_text("a B-NP\nb c B-NP\n")
    with pytest.raises(ValueError, match="line 2 has 3 columns"):
        load_conll(path.parent / "bad.txt")
    (path.parent / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="no tokens"):
        load_conll(path.parent / "empty.txt")


def test_conll_features(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(CONLL_TEXT)
    feats = conll_features(load_conll(path).tokens)
    assert [len(s) for s in feats] == [4, 2, 1]
    first = feats[0][0]
    assert first["bias"] == 1.0 and first["BOS"] is True and "EOS" not in first
    assert first["word.lower()"] == "confidence" and first["word[-3:]"] == "nce"
    assert first["word[-2:]"] == "ce" and first["word.istitle()"] is True
    assert first["postag"] == "NN" and first["+1:word.lower()"] == "in"
    assert first["+1:postag[:2]"] == "IN" and "-1:word.lower()" not in first
    last = feats[0][3]
    assert last["EOS"] is True and last["-1:word.lower()"] == "the"
    assert last["postag[:2]"] == "NN" and last["-1:postag"] == "DT"
    assert feats[1][1]["word.isupper()"] is True and feats[1][1]["-1:word.istitle()"] is True
    assert feats[2][0]["word.isdigit()"] is True
    assert feats[2][0]["BOS"] is True and feats[2][0]["EOS"] is True
    # Without a POS column, no postag features.
    words_only = conll_features([np.array([["a"], ["b"]])])
    assert "postag" not in words_only[0][0] and "+1:postag" not in words_only[0][0]


def test_load_conll_reads_an_open_text_file():
    # CoNLL-2000's own layout (its first sentence), read from a file object, with a
    # -DOCSTART- line between sentences, tabs, blank runs and no final newline
    text = ("Confidence NN B-NP\nin IN B-PP\nthe DT B-NP\npound NN I-NP\n\n"
            "-DOCSTART- -X- O\nis\tVBZ\tB-VP\n\n\n\nwidely RB I-VP")
    d = load_conll(io.StringIO(text))
    assert d.n_columns == 3
    assert [len(y) for y in d.y] == [4, 1, 1]
    assert d.tokens[0][0].tolist() == ["Confidence", "NN"] and d.y[0][0] == "B-NP"
    assert d.tokens[1].tolist() == [["is", "VBZ"]] and d.y[1].tolist() == ["B-VP"]
    assert d.tokens[2].tolist() == [["widely", "RB"]] and d.y[2].tolist() == ["I-VP"]


def test_binary_denoising_grids():
    from skstruct.datasets import grid_edges, make_binary_denoising

    e = grid_edges(3, 4)
    assert e.shape == (3 * 3 + 2 * 4, 2)
    assert set(map(tuple, e.tolist())) >= {(0, 1), (0, 4), (10, 11), (7, 11)}
    d = make_binary_denoising(3, 20, noise=0.5, random_state=0)
    again = make_binary_denoising(3, 20, noise=0.5, random_state=0)
    assert len(d.X) == len(d.y) == 3
    nodes, edges, ef = d.X[0]
    assert nodes.shape == (400, 2) and edges.shape == (2 * 19 * 20, 2) and ef.shape == (760, 2)
    assert set(np.unique(d.y[0])) == {0, 1}
    # binarised at the median: both labels common
    assert 0.3 < d.y[0].mean() < 0.7
    np.testing.assert_array_equal(nodes[:, 0], d.noisy[0].ravel())
    np.testing.assert_array_equal(again.X[1][0], d.X[1][0])
    assert np.all((ef[:, 1] > 0) & (ef[:, 1] <= 1))


def test_binary_denoising_without_pillow_says_what_to_install(monkeypatch):
    import sys

    from skstruct.datasets import make_binary_denoising

    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match="Pillow: python -m pip install pillow"):
        make_binary_denoising(1, 10)
