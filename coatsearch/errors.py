"""Exceptions: UserError (the CLI prints it and exits 2) and the outcomes of one trial (TrialFailed, Pruned)."""


class UserError(Exception):
    """Bad input from the user (a space file, a dataset path, a flag): printed without a traceback."""


class TrialFailed(Exception):
    """A trial that could not finish; the message is the reason stored with it."""


class Pruned(Exception):
    """Raised from a per-epoch report when the engine's pruner stops the trial."""
