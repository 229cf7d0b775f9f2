"""Plotting a grid labelling."""

import numpy as np


def plot_grid(x, cmap=None, border_color=None, axes=None, linewidth=1):
    """Show a 2-D labelling as an image with lines between the cells.

    Parameters
    ----------
    x : array-like of shape (height, width)
    cmap : matplotlib colormap, optional
    border_color : matplotlib color, default 'black'
    axes : matplotlib Axes, optional
        Draw there; by default in a new figure.
    linewidth : float, default=1
        Width of the lines between cells.

    Returns
    -------
    axes : matplotlib Axes
    """
    import matplotlib.pyplot as plt

    x = np.asarray(x)
    if axes is None:
        axes = plt.figure().gca()
    axes.matshow(x, cmap=cmap)
    axes.set_xticks(np.arange(1, x.shape[1]) - .5)
    axes.set_yticks(np.arange(1, x.shape[0]) - .5)
    axes.grid(linestyle="-", linewidth=linewidth,
              color="black" if border_color is None else border_color)
    axes.set_xticklabels(())
    axes.set_yticklabels(())
    return axes
