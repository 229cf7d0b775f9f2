"""Decoding under constraints given at prediction time.

Two kinds, both hard: labels *clamped* at given nodes (a user who knows part of the
answer, or an interactive annotator fixing a tag), and label pairs *forbidden* on every
edge (for chains: transitions, such as ``I-NP`` after ``B-VP`` in BIO chunking).  Both
become ``-inf`` potentials, which every decoder of :mod:`skstruct.inference` treats as
hard constraints: Viterbi, exact max-sum and sum-product on trees, enumeration, TRW-S
and loopy belief propagation.  A sample the constraints leave without any labelling
is refused with a ``ValueError`` naming it, rather than decoded to something that
breaks them.
"""

import warnings

import numpy as np

from ._core._warnings import InfeasibilityWarning


def _codes(classes, labels, what):
    """Positions of ``labels`` in ``classes_``; a ``ValueError`` names ``what`` for a
    label the estimator has never seen."""
    codes = np.empty(len(labels), np.int64)
    for j, lab in enumerate(labels):
        hit = np.flatnonzero(classes == lab) if np.ndim(lab) == 0 else []
        if len(hit) != 1:
            raise ValueError(f"{what(j)}: {lab!r} is not one of the labels seen in fit "
                             f"(classes_ = {list(classes)})")
        codes[j] = hit[0]
    return codes


def _check_forbidden(forbidden, classes):
    """``(n_pairs, 2)`` codes of the forbidden label pairs."""
    pairs = list(forbidden)
    for j, p in enumerate(pairs):
        if isinstance(p, str) or np.ndim(p) != 1 or len(p) != 2:
            raise ValueError(f"forbidden[{j}] must be a pair of labels (a, b), got {p!r}")
    if not pairs:
        return np.zeros((0, 2), np.int64)
    a = _codes(classes, [p[0] for p in pairs], lambda j: f"forbidden[{j}][0]")
    b = _codes(classes, [p[1] for p in pairs], lambda j: f"forbidden[{j}][1]")
    return np.stack([a, b], axis=1)


def _check_clamp(clamp, classes, lengths):
    """Global node indices and label codes of the clamped nodes."""
    if isinstance(clamp, (dict, str)) or not hasattr(clamp, "__len__"):
        raise ValueError("clamp must be a sequence with one entry per sample (None, a dict "
                         "{node: label}, or a sequence of n_nodes labels with None for free "
                         f"nodes), got {type(clamp).__name__}")
    S = lengths.shape[0]
    if len(clamp) != S:
        raise ValueError(f"clamp has {len(clamp)} entries but X has {S} samples")
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    nodes, labels = [], []
    for s, c in enumerate(clamp):
        if c is None:
            continue
        if isinstance(c, dict):
            items = list(c.items())
        else:
            if isinstance(c, str) or not hasattr(c, "__len__") or len(c) != lengths[s]:
                raise ValueError(f"sample {s}: clamp must be None, a dict {{node: label}} or "
                                 f"{lengths[s]} labels (one per node, None for free nodes)")
            items = [(v, lab) for v, lab in enumerate(c) if lab is not None]
        for v, lab in items:
            if (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                    or not 0 <= v < lengths[s]):
                raise ValueError(f"sample {s}: clamped node {v!r} is not a node index in "
                                 f"[0, {lengths[s]})")
            nodes.append(offsets[s] + int(v))
            labels.append((s, v, lab))
    codes = _codes(classes, [lab for _, _, lab in labels],
                   lambda j: f"sample {labels[j][0]}: the label clamped at node {labels[j][1]}")
    return np.asarray(nodes, np.int64), codes


def constrained_potentials(design, unary, tables, classes, clamp, forbidden):
    """``unary`` and ``tables`` with the constraints as ``-inf`` entries (copies of the
    arrays a constraint changes)."""
    if forbidden is not None:
        pairs = _check_forbidden(forbidden, classes)
        if len(pairs) and design.batch.n_edges == 0:
            raise ValueError("forbidden label pairs need a model whose samples have edges; "
                             "these samples have none")
        tables = np.array(tables, dtype=np.float64, copy=True)
        tables[:, pairs[:, 0], pairs[:, 1]] = -np.inf
    if clamp is not None:
        nodes, codes = _check_clamp(clamp, classes, design.batch.lengths)
        unary = unary.copy()
        keep = unary[nodes, codes]
        unary[nodes] = -np.inf
        unary[nodes, codes] = keep
    return unary, tables


def _refuse_infeasible(bad):
    if np.any(bad):
        s = int(np.flatnonzero(bad)[0])
        raise ValueError(f"sample {s}: no labelling satisfies the constraints (the clamped "
                         "labels and forbidden pairs exclude every labelling, or leave only "
                         "labellings the model forbids)")


def _by_method(design, unary, tables, pw_index, run):
    """``run(batch, unary, tables, pw_index, method)`` on the samples the model
    enumerates (``method="exact"``) and on the others (``"auto"``), results per node
    and per sample put back in order."""
    from ._core._decoders import BY_CODE, EXACT

    b = design.batch
    # enumerated samples stay enumerated; the others go to "auto", whose methods all
    # take -inf pairwise scores (a cut refuses them: constraints="unary")
    exact = BY_CODE[EXACT].name
    groups = [(np.flatnonzero(design.kind == EXACT), exact),
              (np.flatnonzero(design.kind != EXACT), "auto")]
    if len(groups[0][0]) in (0, b.n_samples):
        return run(b, unary, tables, pw_index, groups[0][1] if len(groups[0][0]) else "auto")
    node_out = per_sample = None
    for idx, method in groups:
        sub, nodes, edges = b.take(idx)
        node, ok = run(sub, unary[nodes], tables, pw_index[edges], method)
        if node_out is None:
            node_out = np.zeros((b.n_nodes,) + node.shape[1:], node.dtype)
            per_sample = np.ones(b.n_samples, bool)
        node_out[nodes] = node
        per_sample[idx] = ok
    return node_out, per_sample


def constrained_map(design, unary, tables, pw_index):
    """MAP labels (N,) under ``-inf`` constraints: Viterbi on chains, exact max-sum on
    other forests, enumeration on the samples the model enumerates, TRW-S on the other
    loopy ones."""
    from .inference import map_batch

    def run(batch, u, t, i, method):
        labels, info = map_batch(batch, u, t, i, method=method, return_info=True)
        return labels, info.feasible

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibilityWarning)
        labels, feasible = _by_method(design, unary, tables, pw_index, run)
    _refuse_infeasible(~feasible)
    return labels


def constrained_marginals(design, unary, tables, pw_index):
    """Node marginals (N, K) under ``-inf`` constraints: forward-backward, tree
    sum-product, enumeration on the samples the model enumerates, loopy belief
    propagation on the other loopy ones."""
    from .inference import marginals_batch

    def run(batch, u, t, i, method):
        node, _, logz, info = marginals_batch(batch, u, t, i, method=method,
                                              edge_marginals=None, return_info=True)
        return node, (logz > -np.inf) & info.feasible

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibilityWarning)
        node, feasible = _by_method(design, unary, tables, pw_index, run)
    _refuse_infeasible(~feasible)
    return node
