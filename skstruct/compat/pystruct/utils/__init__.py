"""pystruct's utilities: grid graphs, margin constraints, brute-force inference, logging."""

from .graph import edge_list_to_features, make_grid_edges
from .inference import (
    compress_sym,
    exhaustive_inference,
    exhaustive_loss_augmented_inference,
    expand_sym,
    find_constraint,
    find_constraint_latent,
    inference,
    loss_augmented_inference,
    objective_primal,
    unwrap_pairwise,
)
from .logging import SaveLogger
from .plotting import plot_grid

__all__ = ["SaveLogger", "compress_sym", "edge_list_to_features", "exhaustive_inference",
           "exhaustive_loss_augmented_inference", "expand_sym", "find_constraint",
           "find_constraint_latent", "inference", "loss_augmented_inference",
           "make_grid_edges", "objective_primal", "plot_grid", "unwrap_pairwise"]
