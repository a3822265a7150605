"""The one exception type the CLI turns into a clean message and exit status 2."""


class UserError(Exception):
    """Bad input from the user (a space file, a dataset path, a flag): printed without a traceback."""
