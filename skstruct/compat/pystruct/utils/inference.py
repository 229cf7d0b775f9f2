"""The margin constraints of structured SVMs, brute-force inference, symmetric tables."""

import itertools

import numpy as np

__all__ = ["compress_sym", "exhaustive_inference", "exhaustive_loss_augmented_inference",
           "expand_sym", "find_constraint", "find_constraint_latent", "inference",
           "loss_augmented_inference", "objective_primal", "unwrap_pairwise"]


def unwrap_pairwise(y):
    """The node part of ``y``: ``y[0]`` of a relaxed ``(unary, pairwise)`` pair, else ``y``."""
    return y[0] if isinstance(y, tuple) else y


def expand_sym(sym_compressed):
    """The symmetric matrix whose lower triangle (diagonal included) is given.

    Parameters
    ----------
    sym_compressed : ndarray of shape (size * (size + 1) / 2,)
        The lower triangle, row by row (the inverse of :func:`compress_sym`).

    Returns
    -------
    ndarray of shape (size, size)
    """
    sym_compressed = np.asarray(sym_compressed)
    length = sym_compressed.size
    size = int(round((np.sqrt(8 * length + 1) - 1) / 2))
    if size * (size + 1) // 2 != length:
        raise ValueError(f"{length} numbers are not the lower triangle of a square matrix")
    sym = np.zeros((size, size))
    sym[np.tri(size, dtype=bool)] = sym_compressed
    return sym + sym.T - np.diag(np.diag(sym))


def compress_sym(sym_expanded, make_symmetric=True):
    """The lower triangle (diagonal included) of a square matrix, row by row.

    Parameters
    ----------
    sym_expanded : ndarray of shape (size, size)
    make_symmetric : bool, default=True
        First add the upper triangle onto the lower one (``A + A.T -
        diag(A)``): for a matrix holding each pair's count in either
        triangle, the result counts each unordered pair once.

    Returns
    -------
    ndarray of shape (size * (size + 1) / 2,)
    """
    sym_expanded = np.asarray(sym_expanded)
    size = sym_expanded.shape[0]
    if make_symmetric:
        sym_expanded = sym_expanded + sym_expanded.T - np.diag(np.diag(sym_expanded))
    return sym_expanded[np.tri(size, dtype=bool)]


def find_constraint(model, x, y, w, y_hat=None, relaxed=True, compute_difference=True):
    """The most violated margin constraint of one sample (or that of ``y_hat``).

    Parameters
    ----------
    model : StructuredModel
    x, y : one sample and its labelling
    w : ndarray of shape (size_joint_feature,)
    y_hat : labelling, optional
        By default the loss-augmented prediction ``model.loss_augmented_inference(x, y, w)``.
    relaxed : bool, default=True
        Passed to the loss-augmented inference.
    compute_difference : bool, default=True
        Return ``joint_feature(x, y) - joint_feature(x, y_hat)``; otherwise
        only ``-joint_feature(x, y_hat)``.

    Returns
    -------
    y_hat : the labelling
    delta_joint_feature : ndarray of shape (size_joint_feature,)
    slack : float
        ``max(0, loss - w . delta_joint_feature)``.
    loss : float
        ``model.loss(y, y_hat)`` (the continuous loss of a relaxed ``y_hat``).
    """
    if y_hat is None:
        y_hat = model.loss_augmented_inference(x, y, w, relaxed=relaxed)
    rescale = getattr(model, "rescale_C", False)
    if rescale:
        delta = -model.joint_feature(x, y_hat, y)
    else:
        delta = -model.joint_feature(x, y_hat)
    if compute_difference:
        delta = delta + (model.joint_feature(x, y, y) if rescale else model.joint_feature(x, y))
    if isinstance(y_hat, tuple):
        loss = model.continuous_loss(y, y_hat[0])
    else:
        loss = model.loss(y, y_hat)
    slack = max(loss - np.dot(w, delta), 0)
    return y_hat, delta, slack, loss


def find_constraint_latent(model, x, y, w, relaxed=True):
    """The most violated constraint of a latent model, at the completion ``model.latent(x, y, w)``.

    Returns
    -------
    h_hat, delta_joint_feature, slack, loss : as :func:`find_constraint`.
    """
    h = model.latent(x, y, w)
    h_hat = model.loss_augmented_inference(x, h, w, relaxed=relaxed)
    delta = model.joint_feature(x, h) - model.joint_feature(x, h_hat)
    loss = model.loss(y, h_hat)
    slack = max(loss - np.dot(w, delta), 0)
    return h_hat, delta, slack, loss


def inference(model, x, w, constraints=None):
    """``model.inference(x, w)`` (with ``constraints`` when given)."""
    if constraints:
        return model.inference(x, w, constraints=constraints)
    return model.inference(x, w)


def loss_augmented_inference(model, x, y, w, relaxed=True):
    """``model.loss_augmented_inference(x, y, w, relaxed=relaxed)``."""
    return model.loss_augmented_inference(x, y, w, relaxed=relaxed)


def objective_primal(model, w, X, Y, C, variant="n_slack", n_jobs=1):
    """The structured SVM's primal objective at ``w``.

    ``C * sum_i slack_i + ||w||^2 / 2`` with each sample's slack from
    :func:`find_constraint` (with the one-slack formulation, ``variant='one_slack'``,
    the optimal joint slack at ``w`` is the same sum).

    Parameters
    ----------
    model : StructuredModel
    w : ndarray of shape (size_joint_feature,)
    X, Y : sequences of samples and labellings
    C : float
    variant : {'n_slack', 'one_slack'}, default='n_slack'
    n_jobs : int, default=1
        Samples processed in parallel (joblib).

    Returns
    -------
    float
    """
    if n_jobs == 1:
        constraints = [find_constraint(model, x, y, w) for x, y in zip(X, Y)]
    else:
        from joblib import Parallel, delayed

        constraints = Parallel(n_jobs=n_jobs)(
            delayed(find_constraint)(model, x, y, w) for x, y in zip(X, Y))
    slacks = np.maximum([c[2] for c in constraints], 0)
    return max(np.sum(slacks), 0) * C + np.sum(np.asarray(w) ** 2) / 2.


def _labellings(model, shape):
    size = int(np.prod(shape))
    for labels in itertools.product(range(model.n_states), repeat=size):
        yield np.array(labels, dtype=np.int64).reshape(shape)


def exhaustive_loss_augmented_inference(model, x, y, w):
    """Loss-augmented inference by enumerating every labelling (tiny problems only).

    Returns
    -------
    y_hat : the labelling maximising ``loss(y, y_hat) + w . joint_feature(x, y_hat)``
        (the first found, in lexicographic order, among ties).
    """
    y = np.asarray(y)
    best, best_y = -np.inf, None
    for y_hat in _labellings(model, y.shape):
        score = model.loss(y, y_hat) + np.dot(w, model.joint_feature(x, y_hat))
        if score > best:
            best, best_y = score, y_hat
    return best_y


def exhaustive_inference(model, x, w):
    """Inference by enumerating every labelling (tiny problems only).

    Returns
    -------
    y_hat : the labelling maximising ``w . joint_feature(x, y_hat)``, in the
        shape of ``x``'s nodes (the first found among ties).
    """
    feats = x if isinstance(x, np.ndarray) else model._get_features(x)
    best, best_y = -np.inf, None
    for y_hat in _labellings(model, feats.shape[:-1]):
        score = np.dot(w, model.joint_feature(x, y_hat))
        if score > best:
            best, best_y = score, y_hat
    return best_y
