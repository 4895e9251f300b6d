"""Download a ``.tgz`` archive and extract chosen members (Shokri et al. data sets)."""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tabmia.exceptions import DataNotFoundError
from ._home import download_or_raise, missing_data_error

__all__ = ["fetch_archive_members"]


def _extract_member(tar: tarfile.TarFile, suffix: str, dest: Path) -> bool:
    """Copy the regular-file member whose name ends with ``suffix`` to ``dest`` atomically."""
    for member in tar.getmembers():
        name = member.name.lstrip("./")
        if member.isfile() and (name == suffix or name.endswith("/" + suffix)):
            src = tar.extractfile(member)
            if src is None:
                return False
            dest.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as out, src:
                    shutil.copyfileobj(src, out, 1 << 20)
                os.replace(tmp, dest)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            return True
    return False


def fetch_archive_members(
    urls: Sequence[str],
    archive: Path | None,
    members: dict[str, Path],
    *,
    looked: Sequence[Path],
    what: str,
    data_home: Path,
    hint: str,
) -> dict[str, Path]:
    """Download ``archive`` (first URL that works) and extract ``members``.

    Parameters
    ----------
    urls : sequence of str
        Mirrors, tried in order.
    archive : pathlib.Path or None
        Where the ``.tgz`` is stored (kept for reuse); ``None`` if no writable
        location exists.
    members : dict
        Member name suffix (e.g. ``"texas/100/feats"``) -> destination path.
    looked, what, data_home, hint
        For the :class:`DataNotFoundError` raised on failure.

    Returns
    -------
    dict
        Member suffix -> extracted path.
    """
    if archive is None or not archive.is_file():
        last: DataNotFoundError | None = None
        for url in urls:
            try:
                archive = download_or_raise(
                    url,
                    archive,
                    sha256=None,
                    looked=looked,
                    what=what,
                    data_home=data_home,
                    hint=hint,
                )
                break
            except DataNotFoundError as exc:
                last = exc
        else:
            assert last is not None
            raise last
    try:
        with tarfile.open(archive, "r:*") as tar:
            missing = [s for s, dest in members.items() if not _extract_member(tar, s, dest)]
    except (tarfile.TarError, OSError) as exc:
        raise missing_data_error(
            looked, what=what, data_home=data_home, hint=hint,
            download_note=f"Downloaded archive {archive} could not be read: {exc}",
        ) from None  # fmt: skip
    if missing:
        raise missing_data_error(
            looked, what=what, data_home=data_home, hint=hint,
            download_note=f"Downloaded archive {archive} lacks {missing}.",
        )  # fmt: skip
    return dict(members)
