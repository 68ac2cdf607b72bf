"""Fixtures of the sync tests: two fake vLLM releases served by a local PEP 503 index, and a book repo.

* ``tests/roots/sync-v1`` / ``sync-v2`` are the unpacked sdists of releases 0.1.0 and 0.2.0;
  :func:`index_server` packs them into ``vllm-0.1.0.tar.gz`` / ``vllm-0.2.0.tar.gz`` and serves
  ``/simple/vllm/`` (with ``#sha256=`` fragments) on 127.0.0.1, like PyPI.
* :func:`book` is a git repository copied from ``tests/roots/sync-book``, pinned to 0.1.0 (the pin,
  the gitlink and the README block are written here), with ``vllm/`` provisioned from the sdist.
"""

from __future__ import annotations

import hashlib
import http.server
import shutil
import threading

import pytest
from sync_helpers import REPO, ROOTS, V1_SHA, git, make_sdist, write_pin


@pytest.fixture(scope="session")
def index_server(tmp_path_factory):
    """A PEP 503 index at ``http://127.0.0.1:<port>/simple/vllm/`` serving both fake releases."""
    www = tmp_path_factory.mktemp("pypi")
    files = www / "files"
    files.mkdir()
    links, digests = [], {}
    for version, tree in (("0.1.0", ROOTS / "sync-v1"), ("0.2.0", ROOTS / "sync-v2")):
        data = make_sdist(tree, version)
        name = f"vllm-{version}.tar.gz"
        (files / name).write_bytes(data)
        digests[version] = hashlib.sha256(data).hexdigest()
        links.append(f'<a href="../../files/{name}#sha256={digests[version]}">{name}</a><br/>')
    (www / "simple" / "vllm").mkdir(parents=True)
    (www / "simple" / "vllm" / "index.html").write_text("<html><body>\n" + "\n".join(links) + "\n</body></html>\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=str(www), **kw)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield {"url": f"http://127.0.0.1:{server.server_address[1]}/simple/vllm/", "sha256": digests, "files": files}
    server.shutdown()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty download cache (``VLLM_BOOK_CACHE``) per test."""
    c = tmp_path / "cache"
    c.mkdir()
    monkeypatch.setenv("VLLM_BOOK_CACHE", str(c))
    monkeypatch.delenv("VLLM_BOOK_SRC", raising=False)
    monkeypatch.delenv("PROFILE", raising=False)
    monkeypatch.delenv("COMMIT", raising=False)
    return c


@pytest.fixture
def book(tmp_path, cache, index_server):
    """A clean, committed book repository pinned to the fake 0.1.0, ``vllm/`` provisioned."""
    from vllm_book import pin as pin_mod
    from vllm_book.sync import pinfiles

    root = tmp_path / "book"
    shutil.copytree(ROOTS / "sync-book", root)
    (root / ".gitmodules").write_text(
        '[submodule "vllm"]\n\tpath = vllm\n\turl = http://127.0.0.1:9/vllm-project/vllm.git\n')
    write_pin(root, index_server["url"], "0.1.0", V1_SHA, index_server["sha256"]["0.1.0"])
    pinfiles.write_readme(root / "README.md", pin_mod.load_pin(root))
    (root / "vllm").mkdir()
    pin_mod.provision(root, quiet=True)
    (root / ".gitignore").write_text("/node_modules\n/_build/\n__pycache__/\n")
    if (REPO / "node_modules" / "mermaid").is_dir():
        (root / "node_modules").symlink_to(REPO / "node_modules")
    git(root, "init", "-q")
    git(root, "update-index", "--add", "--cacheinfo", f"160000,{V1_SHA},vllm")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "fixture book")
    assert git(root, "status", "--porcelain") == ""
    return root
