"""The background browser process, seen from the Sphinx side.

:func:`_start_worker` (``builder-inited``) starts ``python -m
vllm_book.browser.worker`` (:mod:`.worker`) for the build; :func:`_send_spec`
(``env-updated``) sends it the build spec once every citation is known; the
extension's ``build-finished`` hook waits for its result through the
:class:`_Worker` handle in :data:`_WORKERS`.  :func:`_kill_workers` (``atexit``)
makes sure an interrupted build leaves no worker behind; :func:`summary` is the
one log line of a browser run.
"""

from __future__ import annotations

import atexit
import json
import os
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .spec import _enabled, _jobs, _logger, _source_root, cache_root, spec_from_app

if TYPE_CHECKING:
    from sphinx.application import Sphinx


class _Worker:
    """Handle of the background browser process (``worker.py``) of one build."""

    def __init__(self, proc, err, tmpdir: Path) -> None:
        self.proc = proc
        self.err = err
        self.tmpdir = tmpdir
        self.sent = False

    def send(self, spec: dict) -> bool:
        import pickle

        try:
            self.tmpdir.mkdir(parents=True, exist_ok=True)
            path = self.tmpdir / f"spec-{os.getpid()}-{id(self)}.pickle"
            path.write_bytes(pickle.dumps(spec, pickle.HIGHEST_PROTOCOL))
            self.proc.stdin.write((str(path) + "\n").encode())
            self._close_stdin()
        except (OSError, ValueError):  # the worker is gone: build-finished falls back
            self._close_stdin()
            return False
        self.sent = True
        return True

    def _close_stdin(self) -> None:
        stdin, self.proc.stdin = self.proc.stdin, None  # communicate() must not flush it again
        if stdin is not None:
            try:
                stdin.close()
            except OSError:
                pass

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.finish()

    def finish(self) -> tuple[dict | None, str]:
        """(the worker's result, its stderr tail)."""
        self._close_stdin()
        out, _ = self.proc.communicate()
        self.err.seek(0)
        tail = self.err.read().decode("utf-8", "replace")[-3000:]
        self.err.close()
        if self.proc.returncode != 0:
            return None, tail
        try:
            return json.loads(out.decode("utf-8").strip().splitlines()[-1]), tail
        except (ValueError, IndexError):
            return None, tail


#: app → its background worker
_WORKERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _start_worker(app: Sphinx) -> None:
    """builder-inited: start the background process; it lexes the tree into the cache at once
    (overlapping the index build and the reading) and renders once it gets the spec."""
    if not _enabled(app) or _jobs(app) == 1:
        return
    try:
        root = _source_root(app)
    except Exception:  # noqa: BLE001 - the index build reports a missing tree properly
        return
    import subprocess
    import sys
    import tempfile

    ext_dir = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ext_dir, env.get("PYTHONPATH", "")) if p)
    err = tempfile.TemporaryFile()
    cmd = [sys.executable, "-m", "vllm_book.browser.worker", str(root), str(cache_root(app) / "browser-hl"),
           "--jobs", str(_jobs(app)), "--dirs", *app.config.vllm_book_browser_dirs]
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)
    except OSError as exc:
        err.close()
        _logger().warning("source browser: cannot start the background worker (%s); rendering in-process", exc,
                          type="vllm_book", subtype="browser")
        return
    _WORKERS[app] = _Worker(proc, err, cache_root(app) / "browser-tmp")


def _send_spec(app: Sphinx, env: Any) -> None:
    """env-updated: every citation is known now; the worker renders while Sphinx writes the book."""
    w = _WORKERS.get(app)
    if w is not None and not w.sent:
        w.send(spec_from_app(app))


@atexit.register
def _kill_workers() -> None:  # an interrupted build must not leave the worker running
    for w in list(_WORKERS.values()):
        if w.proc.poll() is None:
            w.proc.kill()


def summary(stats: dict, where: Path) -> str:
    """The one log line of a browser run (tests and the bench read it)."""
    line = (
        f"vllm-book browser: {stats.get('files', 0)} files, rendered {stats.get('rendered', 0)} pages "
        f"(lexed {stats.get('lexed', 0)}), unchanged {stats.get('unchanged', 0)}, aux written "
        f"{stats.get('aux_written', 0)}, removed {stats.get('removed', 0)} in {stats.get('seconds', 0):.2f}s → {where}"
    )
    if "prelex_seconds" in stats:
        line += f" (background highlighter: {stats.get('prelexed', 0)} files in {stats['prelex_seconds']:.1f}s"
        line += f"; waited {stats['waited']:.1f}s for the worker)" if "waited" in stats else ")"
    return line

