"""Energies: values against their definitions, gradients against finite differences."""

import numpy as np
import pytest

from skstruct.energies import LinearMeasurements, NearestStatistic, PoissonCounts, segment_sum
from skstruct.inference import GraphBatch


def _marginals(rng, batch, K):
    node = rng.dirichlet(np.ones(K), size=batch.n_nodes)
    edge = rng.dirichlet(np.ones(K * K), size=batch.n_edges).reshape(-1, K, K)
    return node, edge


def _fd_check(energy, batch, node, edge, psi, use_edges):
    gn, ge = energy.grad(node, edge if use_edges else None, batch, psi)
    eps = 1e-6
    rng = np.random.default_rng(5)
    for _ in range(6):
        dn = rng.normal(size=node.shape)
        de = rng.normal(size=edge.shape) if use_edges else None
        f = lambda t: energy.value(node + t * dn, None if de is None else edge + t * de,  # noqa
                                   batch, psi).sum()
        fd = (f(eps) - f(-eps)) / (2 * eps)
        an = np.sum(gn * dn) + (np.sum(ge * de) if use_edges else 0.0)
        assert np.isclose(fd, an, rtol=1e-5, atol=1e-6)


def test_linear_measurements_value_and_gradient():
    rng = np.random.default_rng(0)
    K = 3
    batch = GraphBatch.from_chains([3, 1, 4])
    node, edge = _marginals(rng, batch, K)
    A = rng.normal(size=(2, K))
    Ae = rng.normal(size=(2, K, K))
    b = np.array([0.2, -0.5])
    en = LinearMeasurements(A, b, A_edge=Ae, smoothing=0.7).fit(None, batch, K)
    psi = rng.uniform(0.5, 2, size=(3, 2))
    # the measurement by its definition, sample by sample
    m = en.measurements(node, edge, batch)
    for s in range(3):
        n0, n1 = batch.node_offsets[s], batch.node_offsets[s + 1]
        e0, e1 = batch.edge_offsets[s], batch.edge_offsets[s + 1]
        ref = A @ node[n0:n1].sum(0) + b + np.einsum("jab,ab->j", Ae, edge[e0:e1].sum(0))
        assert np.allclose(m[s], ref)
    u = 1 - m
    h = np.where(u <= 0, 0, np.where(u <= 0.7, u ** 2 / 1.4, u - 0.35))
    assert np.allclose(en.value(node, edge, batch, psi), (psi * h).sum(1))
    # make some measurements fall in every piece of the smoothed hinge
    assert ((u > 0.7).any() or (u <= 0).any())
    _fd_check(en, batch, node, edge, psi, True)


def test_poisson_counts_value_and_gradient():
    rng = np.random.default_rng(1)
    K = 4
    batch = GraphBatch.from_chains([5, 2])
    node, edge = _marginals(rng, batch, K)
    Y = rng.poisson(2.0, size=(batch.n_nodes, K)).astype(float)
    Y[0, 0] = 0.0
    en = PoissonCounts(Y, population=20.0, rate=0.4).fit(None, batch, K)
    ref = 0.4 * node - np.where(Y > 0, Y / 20 * np.log(0.4 * 20 * node), 0)
    assert np.allclose(en.terms(node, None, batch)[:, 0], segment_sum(ref.sum(1), [0, 5, 7]))
    _fd_check(en, batch, node, edge, np.array([[1.3], [0.6]]), False)
    with pytest.raises(ValueError, match="counts has"):
        PoissonCounts(Y[:, :2]).fit(None, batch, K)
    with pytest.raises(ValueError, match=">= 0"):
        PoissonCounts(-Y).fit(None, batch, K)


def test_nearest_statistic_unigram_against_definition():
    rng = np.random.default_rng(2)
    K = 3
    train = GraphBatch.from_chains([3, 2, 3])
    ytr = np.array([0, 1, 1, 2, 2, 1, 1, 0])       # words 011, 22, 110: counts 121 dup
    en = NearestStatistic("unigram").fit(ytr, train, K)
    assert en.dictionary_[0].shape == (2, K)      # (1, 2, 0) appears twice
    batch = GraphBatch.from_chains([2, 4])
    node, edge = _marginals(rng, batch, K)
    U = segment_sum(node, batch.node_offsets)
    ref = np.abs(U[:, None] - en.dictionary_[0][None]).sum(2).min(1)
    assert np.allclose(en.terms(node, None, batch)[:, 0], ref)
    _fd_check(en, batch, node, edge, 1.7, False)
    # same_length: the 2-letter sample sees only "22", the 4-letter one no word at all
    same = NearestStatistic("unigram", same_length=True).fit(ytr, train, K)
    vals = same.terms(node, None, batch)[:, 0]
    assert np.isclose(vals[0], np.abs(U[0] - [0, 0, 2]).sum())
    assert vals[1] == 0.0
    assert np.all(same.grad(node, None, batch, 1.0)[0][2:] == 0.0)


def test_nearest_statistic_marginals_against_definition():
    rng = np.random.default_rng(3)
    K = 3
    train = GraphBatch.from_chains([3, 3, 2])
    ytr = np.array([0, 1, 2, 2, 1, 0, 1, 1])
    en = NearestStatistic("marginals").fit(ytr, train, K)
    assert list(en.lengths_) == [2, 3]
    batch = GraphBatch.from_chains([3, 2, 4])     # no training word has 4 letters
    node, edge = _marginals(rng, batch, K)
    vals = en.terms(node, None, batch)[:, 0]
    words3 = [np.eye(K)[[0, 1, 2]], np.eye(K)[[2, 1, 0]]]
    assert np.isclose(vals[0], min(np.abs(w - node[0:3]).sum() for w in words3))
    assert np.isclose(vals[1], np.abs(np.eye(K)[[1, 1]] - node[3:5]).sum())
    assert vals[2] == 0.0
    gn, _ = en.grad(node, None, batch, 2.0)
    assert np.all(gn[5:] == 0.0)
    _fd_check(en, batch, node, edge, 2.0, False)


@pytest.mark.parametrize("statistic", ["unigram", "marginals"])
def test_nearest_statistic_is_the_minimum_of_its_pieces(statistic):
    rng = np.random.default_rng(7)
    K = 3
    train = GraphBatch.from_chains([3, 3, 2, 3])
    ytr = np.array([0, 1, 2, 2, 1, 0, 1, 1, 0, 0, 2])
    en = NearestStatistic(statistic).fit(ytr, train, K)
    batch = GraphBatch.from_chains([3, 2, 4, 3])   # no training word has 4 letters
    node, edge = _marginals(rng, batch, K)
    D = en.distances(node, batch)
    assert D.shape == (4, en.n_entries)
    # every piece's value is its distance; the energy is the smallest
    owner, entries = en.pieces(node, batch, None)
    assert np.all(np.diff(owner) >= 0)
    rep, rows, _ = batch.take(owner)
    vals = en.piece(entries, rep).terms(node[rows], None, rep)[:, 0]
    has = entries >= 0
    assert np.allclose(vals[has], D[owner[has], entries[has]])
    assert np.all(vals[~has] == 0.0)
    for s in range(4):
        mine = vals[owner == s]
        assert np.isclose(mine.min(), en.terms(node, None, batch)[s, 0])
        # compared entries only; a sample compared with none keeps one empty piece
        assert mine.size == max(1, int(np.isfinite(D[s]).sum()))
    if statistic == "marginals":
        assert list(entries[owner == 2]) == [-1]
    # the n nearest, nearest first; a piece's gradient is its distance's
    owner2, entries2 = en.pieces(node, batch, 2)
    for s in range(4):
        e = entries2[owner2 == s]
        if e[0] >= 0:
            assert np.allclose(D[s, e], np.sort(D[s])[:e.size])
    piece = en.piece(entries2, batch.take(owner2)[0])
    _fd_check(piece, batch.take(owner2)[0], node[batch.take(owner2)[1]],
              edge[batch.take(owner2)[2]], 1.3, False)


def test_cross_is_the_psi_derivative_of_the_gradient():
    rng = np.random.default_rng(4)
    K = 3
    batch = GraphBatch.from_chains([3, 4])
    node, edge = _marginals(rng, batch, K)
    en = LinearMeasurements(rng.normal(size=(3, K))).fit(None, batch, K)
    d = rng.normal(size=node.shape)
    psi = rng.uniform(size=(2, 3))
    c = en.cross(node, None, batch, d)
    for j in range(3):
        e = np.zeros_like(psi)
        e[:, j] = 1.0
        g1, _ = en.grad(node, None, batch, psi + e)
        g0, _ = en.grad(node, None, batch, psi)
        assert np.allclose(segment_sum(((g1 - g0) * d).sum(1), batch.node_offsets), c[:, j])


def test_energy_errors():
    batch = GraphBatch.from_chains([2])
    with pytest.raises(ValueError, match="A must have shape"):
        LinearMeasurements(np.ones((2, 4))).fit(None, batch, 3)
    with pytest.raises(ValueError, match="smoothing"):
        LinearMeasurements(np.ones((2, 3)), smoothing=0).fit(None, batch, 3)
    with pytest.raises(ValueError, match="statistic"):
        NearestStatistic("bigram").fit(np.zeros(2, int), batch, 3)
    with pytest.raises(ValueError, match="not fitted"):
        NearestStatistic().grad(np.ones((2, 3)) / 3, None, batch, 1.0)
    en = LinearMeasurements(np.ones((2, 3))).fit(None, batch, 3)
    with pytest.raises(ValueError, match="psi must be"):
        en.grad(np.ones((2, 3)) / 3, None, batch, np.ones(5))
    with pytest.raises(ValueError, match="NaN"):
        en.grad(np.ones((2, 3)) / 3, None, batch, np.nan)
