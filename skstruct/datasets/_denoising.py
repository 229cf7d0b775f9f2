"""Binary image denoising on 4-connected grids, from real photographs."""

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ..models import grid_edges


def make_binary_denoising(n_images=100, size=100, noise=1.0, random_state=None):
    """Noisy binary images as grid graphs, for pixel labelling.

    Each clean image is a ``size x size`` crop of one of scikit-learn's two
    sample photographs (``sklearn.datasets.load_sample_images``), converted to
    grey levels, binarised at the crop's median (so both labels are common)
    and observed through additive Gaussian noise of standard deviation
    ``noise``: the observation of a pixel is its label plus noise, as in
    Hazan & Urtasun's denoising experiment.  Reading the photographs needs
    Pillow (the ``images`` extra), which is not a dependency of skstruct.

    Parameters
    ----------
    n_images : int, default=100
    size : int, default=100
        Side of the square images; ``n_images * size ** 2`` pixels in all.
    noise : float, default=1.0
        Standard deviation of the noise (the labels are 0 and 1).
    random_state : None, int or RandomState
        Crops and noise.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``X``: list of tuples ``(node_features, edges, edge_features)``, node
        features of shape (size**2, 2) (per pixel its observation and a
        constant 1), edges of shape (n_edges, 2) and edge features of shape
        (n_edges, 2) (per edge a constant 1 and ``exp(-|o_u - o_v|)`` of the
        two observations: a contrast-sensitive smoothness term, as in
        :class:`~skstruct.models.GraphModel` with edge features);
        ``y``: list of int arrays of shape (size**2,), the clean labels;
        ``clean``, ``noisy``: arrays of shape (n_images, size, size).
    """
    try:
        import PIL  # noqa: F401
    except ImportError as exc:
        raise ImportError("make_binary_denoising reads scikit-learn's sample photographs, "
                          "which needs Pillow: python -m pip install pillow (or, in a clone "
                          "of skstruct, python -m pip install '.[images]')") from exc
    from sklearn.datasets import load_sample_images

    rng = check_random_state(random_state)
    photos = [img.astype(np.float64).mean(axis=2) for img in load_sample_images().images]
    edges = grid_edges(size, size)
    X, y, clean, noisy = [], [], [], []
    for _ in range(n_images):
        photo = photos[rng.randint(len(photos))]
        r = rng.randint(photo.shape[0] - size + 1)
        c = rng.randint(photo.shape[1] - size + 1)
        crop = photo[r:r + size, c:c + size]
        labels = (crop > np.median(crop)).astype(np.int64)
        obs = labels + noise * rng.standard_normal(labels.shape)
        o = obs.ravel()
        node = np.column_stack([o, np.ones_like(o)])
        contrast = np.exp(-np.abs(o[edges[:, 0]] - o[edges[:, 1]]))
        edge_feat = np.column_stack([np.ones(edges.shape[0]), contrast])
        X.append((node, edges, edge_feat))
        y.append(labels.ravel())
        clean.append(labels)
        noisy.append(obs)
    return Bunch(X=X, y=y, clean=np.array(clean), noisy=np.array(noisy))
