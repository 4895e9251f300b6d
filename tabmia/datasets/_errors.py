"""Exceptions raised by the data set loaders."""

from __future__ import annotations

__all__ = ["DataNotFoundError"]


class DataNotFoundError(FileNotFoundError):
    """A data file needed by a loader is not on disk and could not be fetched.

    The message names every absolute path that was looked for and says how to
    place the file there (and, when the loader can download, why the download
    did not happen or failed).  It subclasses :class:`FileNotFoundError`, so
    ``except FileNotFoundError`` keeps working.

    Attributes
    ----------
    paths : list of pathlib.Path
        The candidate paths that were looked for, in search order.
    """

    def __init__(self, message: str, paths: list | tuple = ()) -> None:
        super().__init__(message)
        self.paths = list(paths)

    def __str__(self) -> str:  # FileNotFoundError would print "[Errno None] ..."
        return str(self.args[0]) if self.args else ""
