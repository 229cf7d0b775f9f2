"""Saving a learner while it learns."""

import pickle


class SaveLogger:
    """Pickle the learner every ``save_every`` iterations, and at the end.

    A learner given ``logger=SaveLogger(...)`` calls it with itself and the
    iteration number.

    Parameters
    ----------
    file_name : str
        Where to store the learner; ``'%d'`` in it is replaced by the iteration.
    save_every : int, default=10
        Store every ``save_every`` iterations (and on ``iteration='final'``).
    verbose : int, default=0
        Print a line on every save.
    """

    def __init__(self, file_name, save_every=10, verbose=0):
        self.file_name = file_name
        self.save_every = save_every
        self.verbose = verbose

    def __repr__(self):
        return (f'{type(self).__name__}(file_name="{self.file_name}", '
                f"save_every={self.save_every})")

    def __call__(self, learner, iteration=0):
        """Save ``learner`` if ``iteration`` is ``'final'`` or a multiple of ``save_every``."""
        if iteration == "final" or not iteration % self.save_every:
            file_name = self.file_name
            if "%d" in file_name:
                file_name = file_name % iteration
            if self.verbose > 0:
                print(f"saving {learner} to file {file_name}")
            self.save(learner, file_name)

    def save(self, learner, file_name):
        """Pickle ``learner`` to ``file_name``, without its inference cache."""
        cache = getattr(learner, "inference_cache_", None)
        if cache is not None:
            # the cache of constraints can be far larger than the learner, and is rebuilt
            learner.inference_cache_ = None
        try:
            with open(file_name, "wb") as f:
                pickle.dump(learner, f, -1)
        finally:
            if cache is not None:
                learner.inference_cache_ = cache

    def load(self):
        """The learner stored in ``file_name``."""
        with open(self.file_name, "rb") as f:
            return pickle.load(f)
