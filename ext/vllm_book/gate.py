"""The build's half of the gate: the tree must be the pinned one before anything reads it.

At ``config-inited`` the build runs :func:`vllm_book.tree.check_tree` — the
function ``make validate`` runs for its ``pin`` check — on ``<repo>/vllm``
(or only the symlink check on a tree named by ``vllm_book_src_root``).  A
problem ends the build: each is logged as an error at its ``file:line`` with
its ``fix:`` line, and the process exits with status 2.

Why not ``raise ConfigError``: Sphinx 9 prints any exception — a
``SphinxError`` included — as a crash report ("Configuration error!",
versions, a traceback, "please open an issue at sphinx-doc").  A logged
error and :class:`SystemExit` prints our message and nothing else
(``SystemExit`` is not an ``Exception``, so neither the event manager nor
``sphinx-build`` wraps it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

from .problems import Problem

logger = logging.getLogger(__name__)

EXIT_STATUS = 2


def report(problems: Iterable[Problem], *, subtype: str, error: bool = False, root: Path | None = None) -> int:
    """Log *problems* at their ``file:line`` (warnings, or errors); returns how many."""
    n = 0
    for p in problems:
        location = p.file if Path(p.file).is_absolute() or root is None else str(Path(root) / p.file)
        location = f"{_shown(location)}:{p.line}"
        (logger.error if error else logger.warning)(p.text(), location=location, type="vllm_book", subtype=subtype)
        n += 1
    return n


def _shown(path: str) -> str:
    """A path as the writer typed it: relative to the working directory when inside it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return path


def fail(problems: list[Problem], root: Path | None = None) -> NoReturn:
    """End the build with *problems* (our message, no crash report)."""
    report(problems, subtype="pin", error=True, root=root)
    logger.error("the build stopped: the vLLM tree is not the pinned one (%d problem(s) above)", len(problems),
                 type="vllm_book", subtype="pin")
    raise SystemExit(EXIT_STATUS)


def repo_root(app: Sphinx) -> Path:
    return Path(app.config.vllm_book_repo_root or app.confdir)


def check(app: Sphinx, config: Config) -> None:
    from . import pin as pin_mod
    from . import tree as tree_mod

    root = repo_root(app)
    override = config.vllm_book_src_root or os.environ.get("VLLM_BOOK_SRC", "")
    if override:  # a tree named by hand (tests, impact): no pin to compare with, but never a link out
        src = Path(app.confdir) / override
        problems = tree_mod.check_links(src, label=_shown(str(src)))
        if problems:
            fail(problems)
        return
    try:
        pin = pin_mod.load_pin(root)
    except pin_mod.ProvisionError as exc:
        fail([Problem(pin_mod.PIN_FILE, 1, str(exc).split(": ", 1)[-1],
                      f"restore it: git checkout -- {pin_mod.PIN_FILE} (change it only with make refresh)", "pin")], root)
    from .sync.common import pin_line

    try:
        problems = tree_mod.check_tree(root, pin, pin_line=pin_line(root, "commit"))
    except pin_mod.ProvisionError as exc:
        problems = [Problem(pin_mod.PIN_FILE, pin_line(root, "commit"), str(exc), "run: make vllm", "tree")]
    if problems:
        fail(problems, root)


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.connect("config-inited", check, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
