"""Energies: values against their definitions, gradients against finite differences."""

import numpy as np
import pytest

from skstruct.energies import (
    Energy,
    Linearization,
    LinearMeasurements,
    NearestStatistic,
    PoissonCounts,
    _Target,
    segment_sum,
)
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


def _energies(rng, batch, K):
    """Every energy of the module, fitted, with the marginals-reading flag of each."""
    J = 5
    A = rng.normal(size=(J, K))
    b = rng.normal(size=J)
    lm = LinearMeasurements(A, b, smoothing=0.8).fit(None, batch, K)
    lm_edge = LinearMeasurements(A, b, A_edge=rng.normal(size=(J, K, K)),
                                 smoothing=0.8).fit(None, batch, K)
    ytr = rng.integers(0, K, batch.n_nodes)
    uni = NearestStatistic("unigram").fit(ytr, batch, K)
    marg = NearestStatistic("marginals").fit(ytr, batch, K)
    counts = rng.poisson(2.0, size=(batch.n_nodes, K)).astype(float)
    # one target per sample: a labelling of another sample of the same length, or none
    codes = rng.integers(-1, K, batch.n_nodes)
    return {"linear": lm, "linear_edge": lm_edge, "unigram": uni, "marginals": marg,
            "target_unigram": _Target("unigram", rng.poisson(2.0, size=(batch.n_samples, K))
                                      .astype(float), K),
            "target_marginals": _Target("marginals", codes, K),
            "poisson": PoissonCounts(counts, population=7.0, rate=0.6).fit(None, batch, K)}


ENERGY_NAMES = ["linear", "linear_edge", "unigram", "marginals", "target_unigram",
                "target_marginals", "poisson"]


@pytest.mark.parametrize("name", ENERGY_NAMES)
def test_closed_form_cross_equals_the_per_term_loop(name):
    rng = np.random.default_rng(11)
    K = 4
    batch = GraphBatch.from_chains([3, 1, 5, 2, 4])
    node, edge = _marginals(rng, batch, K)
    en = _energies(rng, batch, K)[name]
    # every energy shipped has its own cross: the generic loop is only a fallback
    assert type(en)._cross is not Energy._cross
    e = edge if en.uses_edges else None
    d_node = rng.normal(size=node.shape)
    d_edge = rng.normal(size=edge.shape)
    for de in (d_edge, None):
        fast = en.cross(node, e, batch, d_node, de)
        loop = Energy._cross(en, node, e, batch, d_node, de)
        assert fast.shape == (batch.n_samples, en.n_terms)
        assert np.allclose(fast, loop, rtol=0, atol=1e-10)
    assert np.abs(fast).max() > 1e-3            # not a trivially zero comparison
    if en.uses_edges:
        # the edge direction counts: dropping it changes the result
        assert not np.allclose(en.cross(node, e, batch, d_node, d_edge),
                               en.cross(node, e, batch, d_node, None))


@pytest.mark.parametrize("name", ENERGY_NAMES)
def test_cross_is_the_directional_derivative_of_the_terms(name):
    # cross_sj = grad_mu l_j(mu_s) . d_s: the derivative of l_j along d
    rng = np.random.default_rng(12)
    K = 3
    batch = GraphBatch.from_chains([4, 2, 3])
    node, edge = _marginals(rng, batch, K)
    node = 0.2 + 0.6 * node                       # away from 0 (Poisson's log)
    en = _energies(rng, batch, K)[name]
    use = en.uses_edges
    d_node = rng.normal(size=node.shape)
    d_edge = rng.normal(size=edge.shape) if use else None
    eps = 1e-6

    def terms(t):
        return en.terms(node + t * d_node, edge + t * d_edge if use else None, batch)

    fd = (terms(eps) - terms(-eps)) / (2 * eps)
    assert np.allclose(en.cross(node, edge if use else None, batch, d_node, d_edge), fd,
                       rtol=1e-5, atol=1e-6)


def test_cross_is_the_psi_derivative_of_the_gradient():
    rng = np.random.default_rng(4)
    K = 3
    batch = GraphBatch.from_chains([3, 4])
    node, edge = _marginals(rng, batch, K)
    for Ae in (None, rng.normal(size=(3, K, K))):
        en = LinearMeasurements(rng.normal(size=(3, K)), A_edge=Ae).fit(None, batch, K)
        e = None if Ae is None else edge
        d = rng.normal(size=node.shape)
        de = rng.normal(size=edge.shape)
        psi = rng.uniform(size=(2, 3))
        c = en.cross(node, e, batch, d, de)
        eps = 1e-4
        for j in range(3):
            step = np.zeros_like(psi)
            step[:, j] = eps
            g1n, g1e = en.grad(node, e, batch, psi + step)
            g0n, g0e = en.grad(node, e, batch, psi - step)
            dd = segment_sum(((g1n - g0n) * d).sum(1), batch.node_offsets)
            if Ae is not None:
                dd += segment_sum(((g1e - g0e) * de).sum((1, 2)), batch.edge_offsets)
            assert np.allclose(dd / (2 * eps), c[:, j])


@pytest.mark.parametrize("name", ENERGY_NAMES)
def test_linearization_is_the_gradient_at_fixed_marginals(name):
    rng = np.random.default_rng(13)
    K = 4
    batch = GraphBatch.from_chains([3, 6, 2, 4])
    node, edge = _marginals(rng, batch, K)
    en = _energies(rng, batch, K)[name]
    e = edge if en.uses_edges else None
    lin = en.linearize(node, e, batch)
    assert isinstance(lin, Linearization)
    for _ in range(2):                             # the cache is reused, not consumed
        psi = rng.uniform(0.1, 2.0, size=(batch.n_samples, en.n_terms))
        d_node, d_edge = rng.normal(size=node.shape), rng.normal(size=edge.shape)
        for got, ref in zip(lin.grad(psi), en.grad(node, e, batch, psi)):
            assert (got is None) == (ref is None)
            if ref is not None:
                assert np.allclose(got, ref, rtol=0, atol=1e-12)
        assert np.allclose(lin.cross(d_node, d_edge), en.cross(node, e, batch, d_node, d_edge),
                           rtol=0, atol=1e-12)
    # linear in psi: the gradient at psi is sum_j psi_j times the terms' directions
    assert np.allclose(lin.grad(2.0 * psi)[0], 2.0 * lin.grad(psi)[0])


class _SquaredCounts(Energy):
    """A user energy with several terms and no closed-form cross: ``l_j =
    (a_j . U_s - c_j)^2 / 2`` on the expected label counts ``U_s``."""

    def __init__(self, A, c):
        self.A = A
        self.c = c

    @property
    def n_terms(self):
        return np.asarray(self.A).shape[0]

    def _terms(self, node, edge, batch):
        r = segment_sum(node, batch.node_offsets) @ np.asarray(self.A).T - self.c
        return 0.5 * r * r

    def _grad(self, node, edge, batch, psi):
        r = segment_sum(node, batch.node_offsets) @ np.asarray(self.A).T - self.c
        return np.repeat((psi * r) @ np.asarray(self.A), batch.lengths, axis=0), None


def test_user_energy_without_closed_form_goes_through_the_fallback():
    rng = np.random.default_rng(14)
    K = 3
    batch = GraphBatch.from_chains([3, 4, 2])
    node, _ = _marginals(rng, batch, K)
    A = rng.normal(size=(4, K))
    c = rng.normal(size=4)
    en = _SquaredCounts(A, c).fit(None, batch, K)
    d = rng.normal(size=node.shape)
    got = en.cross(node, None, batch, d)
    # by hand: grad l_j = r_sj a_j on every node, so cross = r_sj a_j . sum_v d_v
    r = segment_sum(node, batch.node_offsets) @ A.T - c
    assert np.allclose(got, r * (segment_sum(d, batch.node_offsets) @ A.T))
    lin = en.linearize(node, None, batch)
    assert type(lin) is Linearization
    psi = rng.uniform(size=(3, 4))
    assert np.allclose(lin.grad(psi)[0], en.grad(node, None, batch, psi)[0])
    assert np.allclose(lin.cross(d), got)


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
