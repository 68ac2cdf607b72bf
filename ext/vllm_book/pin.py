"""The vLLM pin and the provisioning of the pinned source tree.

One pin, in one file (``vllm-pin.toml`` at the repository root), read by
everything else.  The tree lives at ``<repo>/vllm``:

* if the git submodule is initialised (``vllm/.git`` exists) it is used as is,
  after checking that its HEAD is the pinned commit;
* otherwise the PyPI sdist of the pinned release is downloaded once into a
  cache outside the build directory, its sha256 is verified, its
  ``vllm/_version.py`` commit is checked against the pin, and it is unpacked
  into ``vllm/`` together with a provenance record and a manifest of every
  file (path, size, sha256; :mod:`vllm_book.tree` verifies the tree against it).

Git ignores files inside an uninitialised submodule directory, so the
unpacked sdist never shows up in ``git status``.

This module knows nothing about Sphinx: ``validate``/``impact``/``refresh``
and the tests use it directly.  ``python -m vllm_book.pin`` is its CLI.
"""

from __future__ import annotations

import dataclasses
import hashlib
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

PIN_FILE = "vllm-pin.toml"
TREE_DIR = "vllm"
PROVENANCE_FILE = ".vllm-book-provenance.json"
#: overrides ``[vllm.sdist] index`` of the pin (a PEP 503 project page, e.g. ``file:///…/simple/vllm/``)
INDEX_ENV = "VLLM_BOOK_INDEX_URL"
REPO_ROOT = Path(__file__).resolve().parents[2]


class ProvisionError(RuntimeError):
    """Provisioning failed; the message says what to do."""


@dataclasses.dataclass(frozen=True)
class Pin:
    version: str
    commit: str
    repository: str
    sdist_filename: str
    sdist_sha256: str
    index: str
    path: Path  # the pin file

    @property
    def short(self) -> str:
        return self.commit[:10]

    def github_blob(self, relpath: str, start: int | None = None, end: int | None = None) -> str:
        url = f"{self.repository}/blob/{self.commit}/{relpath}"
        if start:
            url += f"#L{start}" + (f"-L{end}" if end and end != start else "")
        return url


@dataclasses.dataclass
class Provenance:
    """Where the tree under ``vllm/`` came from (written next to it)."""

    source: str  # "submodule" | "sdist"
    version: str
    commit: str
    sdist_sha256: str = ""
    sdist_url: str = ""
    provisioned_at: str = ""

    @property
    def tree_key(self) -> str:
        """A stable identity of the tree content, used as a cache key."""
        return f"{self.commit}:{self.sdist_sha256 or 'git'}"


def load_pin(root: Path | None = None) -> Pin:
    root = Path(root or REPO_ROOT)
    path = root / PIN_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        v = data["vllm"]
        sd = v["sdist"]
        pin = Pin(
            version=v["version"],
            commit=v["commit"],
            repository=v["repository"].rstrip("/"),
            sdist_filename=sd["filename"],
            sdist_sha256=sd["sha256"].lower(),
            # a mirror (or the tests' local PEP 503 index) may stand in for the pin's index; the pinned sdist is
            # still checked against the pin's sha256, never the index's
            index=os.environ.get(INDEX_ENV) or sd.get("index", "https://pypi.org/simple/vllm/"),
            path=path,
        )
    except FileNotFoundError:
        raise ProvisionError(f"{path}: pin file missing; restore it from git (git checkout -- {PIN_FILE})") from None
    except (KeyError, tomllib.TOMLDecodeError) as exc:
        raise ProvisionError(f"{path}: malformed pin ({exc}); expected [vllm] version/commit/repository and [vllm.sdist] filename/sha256") from None
    if not re.fullmatch(r"[0-9a-f]{40}", pin.commit):
        raise ProvisionError(f"{path}: [vllm] commit must be a full 40-hex SHA, got {pin.commit!r}")
    if not re.fullmatch(r"[0-9a-f]{64}", pin.sdist_sha256):
        raise ProvisionError(f"{path}: [vllm.sdist] sha256 must be 64 hex digits")
    return pin


def cache_dir() -> Path:
    """Downloads live outside the build dir so a second clone reuses them."""
    if env := os.environ.get("VLLM_BOOK_CACHE"):
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "vllm-book"


def _log(msg: str) -> None:
    print(f"[vllm-book] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# sdist download


class _LinkParser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.attrs: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            for k, v in attrs:
                if k == "href" and v:
                    self.links.append(v)
                    self.attrs.append(dict(attrs))


@dataclasses.dataclass(frozen=True)
class IndexLink:
    """One file of a PEP 503 project page."""

    filename: str
    url: str  # absolute, without the fragment
    sha256: str  # from the ``#sha256=`` fragment ("" when the index publishes none)
    yanked: bool  # PEP 592 ``data-yanked``


def index_links(index_url: str, what: str = "the package index") -> list[IndexLink]:
    """Every file linked from the PEP 503 page *index_url* (the one reader of the simple index: provisioning,
    ``impact`` and ``scripts/upstream-sync.py`` all go through it, so a local fake index serves them all)."""
    req = urllib.request.Request(index_url, headers={"Accept": "text/html"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            page = resp.read().decode("utf-8", "replace")
    except OSError as exc:
        raise ProvisionError(f"cannot reach {what} {index_url} ({exc})") from None
    parser = _LinkParser()
    parser.feed(page)
    out = []
    for href, attrs in zip(parser.links, parser.attrs):
        url = urllib.parse.urljoin(index_url, href)
        base, _, frag = url.partition("#")
        digest = frag.partition("sha256=")[2] if "sha256=" in frag else ""
        out.append(IndexLink(urllib.parse.unquote(base.rsplit("/", 1)[-1]), base, digest.lower(), "data-yanked" in attrs))
    return out


def find_sdist(index_url: str, filename: str) -> tuple[str, str]:
    """Return (url, sha256 from the index) for *filename* on a PEP 503 page."""
    try:
        links = index_links(index_url)
    except ProvisionError as exc:
        raise ProvisionError(
            f"{exc}.\n"
            f"  Fix: check the network, or put {filename} into {cache_dir() / 'sdist'} by hand,\n"
            f"  or initialise the submodule: git submodule update --init vllm"
        ) from None
    for link in links:
        if link.filename == filename:
            return link.url, link.sha256
    raise ProvisionError(f"{filename} is not listed on {index_url}; is the version right?")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch_sdist(filename: str, index: str, expected_sha256: str | None) -> tuple[Path, str, str]:
    """Download (or reuse from the cache) an sdist and verify its hash.

    With *expected_sha256* None the index's published digest is required and
    used (for ``impact``, where the candidate is not pinned yet).
    Returns (path, sha256, url).
    """
    dest_dir = cache_dir() / "sdist"
    dest = dest_dir / filename
    url = ""
    if not dest.exists():
        url, index_digest = find_sdist(index, filename)
        if expected_sha256 is None:
            if not index_digest:
                raise ProvisionError(f"{index} publishes no sha256 for {filename}; refusing an unverifiable download")
            expected_sha256 = index_digest
        dest_dir.mkdir(parents=True, exist_ok=True)
        _log(f"downloading {url}")
        tmp = dest.with_suffix(".part")
        try:
            with urllib.request.urlopen(url, timeout=300) as resp, open(tmp, "wb") as out:
                shutil.copyfileobj(resp, out)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise ProvisionError(f"download of {url} failed: {exc}") from None
        tmp.rename(dest)
    else:
        _log(f"using cached {dest}")
    digest = sha256_file(dest)
    if expected_sha256 is None:
        url, expected_sha256 = find_sdist(index, filename)
    if digest != expected_sha256:
        raise ProvisionError(
            f"sha256 mismatch for {dest}:\n"
            f"  expected {expected_sha256} (from {PIN_FILE} or the index)\n"
            f"  got      {digest}\n"
            f"  The archive is corrupt or has been tampered with. Fix: delete it "
            f"(rm {dest}) and run the command again; if the mismatch persists, "
            f"do not edit the pin by hand — report it."
        )
    return dest, digest, url


def _sdist_commit(tar: tarfile.TarFile, top: str) -> str:
    try:
        member = tar.getmember(f"{top}/vllm/_version.py")
        text = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
    except KeyError:
        raise ProvisionError(f"sdist has no {top}/vllm/_version.py; cannot check its commit") from None
    m = re.search(r"commit_id\s*=\s*['\"]g?([0-9a-f]+)['\"]", text)
    if not m:
        raise ProvisionError(f"{top}/vllm/_version.py records no commit id")
    return m.group(1)


def unpack_sdist(archive: Path, dest: Path, expected_commit: str | None) -> str:
    """Unpack *archive* (its single top directory stripped) into *dest*.

    Returns the abbreviated commit from ``vllm/_version.py``; refuses when it
    is not a prefix of *expected_commit*.
    """
    with tarfile.open(archive, "r:gz") as tar:
        names = tar.getnames()
        top = names[0].split("/", 1)[0]
        commit = _sdist_commit(tar, top)
        if expected_commit and not expected_commit.startswith(commit):
            raise ProvisionError(
                f"{archive.name} was built from commit {commit}, but the pin says {expected_commit}.\n"
                f"  Fix: make {PIN_FILE} name the release built from that commit (make refresh TO=<release>)."
            )
        tmp = Path(tempfile.mkdtemp(prefix=".provision-", dir=dest.parent))
        try:
            tar.extractall(tmp, filter="data")
            dest.mkdir(parents=True, exist_ok=True)
            for child in (tmp / top).iterdir():
                target = dest / child.name
                if target.exists():
                    shutil.rmtree(target) if target.is_dir() else target.unlink()
                child.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return commit


# --------------------------------------------------------------------------
# the tree


def _read_provenance(tree: Path) -> Provenance | None:
    try:
        data = json.loads((tree / PROVENANCE_FILE).read_text())
        return Provenance(**data)
    except (OSError, ValueError, TypeError):
        return None


def _git_head(tree: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise ProvisionError(f"{tree}: submodule present but `git rev-parse HEAD` failed ({exc})") from None
    return out.stdout.strip()


def provision(root: Path | None = None, *, quiet: bool = False) -> Provenance:
    """Make ``<root>/vllm`` hold the pinned tree; return where it came from."""
    root = Path(root or REPO_ROOT)
    pin = load_pin(root)
    tree = root / TREE_DIR
    if (tree / ".git").exists():
        head = _git_head(tree)
        if head != pin.commit:
            raise ProvisionError(
                f"{tree} is checked out at {head}, but {PIN_FILE} pins {pin.commit} (v{pin.version}).\n"
                f"  Fix: git submodule update --init vllm   (or `make refresh TO=...` to move the pin)"
            )
        if not quiet:
            _log(f"vllm/ is the git submodule at the pinned commit {pin.short} (v{pin.version})")
        return Provenance("submodule", pin.version, pin.commit)
    from . import tree as tree_mod  # the manifest (tree.py imports this module)

    prov = _read_provenance(tree)
    if prov and prov.commit == pin.commit and prov.sdist_sha256 == pin.sdist_sha256:
        if tree_mod.load_manifest(tree) is None:
            # provisioned before manifests existed: write it from the (re-)verified sdist, no re-download if cached
            archive, _digest, _url = fetch_sdist(pin.sdist_filename, pin.index, pin.sdist_sha256)
            entries = tree_mod.sdist_entries(archive)
            tree_mod.seal(tree, entries)
            tree_mod.write_manifest(tree, entries, f"regenerated from {pin.sdist_filename}")
            _log(f"vllm/ had no manifest: written from {archive} (run `make validate` to compare the tree with it)")
        if not quiet:
            _log(f"vllm/ already provisioned from {pin.sdist_filename} (sha256 verified at {prov.provisioned_at})")
        return prov
    if prov is None and tree.exists() and any(tree.iterdir()):
        raise ProvisionError(
            f"{tree} holds files but neither a git checkout nor a provenance record.\n"
            f"  Fix: move them away (rm -rf vllm/* vllm/.[!.]*) and run `make vllm` again."
        )
    _log(
        f"the vllm submodule is not initialised (no network to GitHub?); provisioning "
        f"v{pin.version} from PyPI's sdist {pin.sdist_filename}, sha256-verified"
    )
    archive, digest, url = fetch_sdist(pin.sdist_filename, pin.index, pin.sdist_sha256)
    if prov is not None:  # an older provisioned release: replace it wholesale
        shutil.rmtree(tree)
    tree.mkdir(parents=True, exist_ok=True)
    unpack_sdist(archive, tree, pin.commit)
    entries = tree_mod.sdist_entries(archive)
    tree_mod.seal(tree, entries)
    tree_mod.write_manifest(tree, entries, "sdist")
    prov = Provenance(
        source="sdist",
        version=pin.version,
        commit=pin.commit,
        sdist_sha256=digest,
        sdist_url=url or f"{pin.index}#{pin.sdist_filename}",
        provisioned_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    (tree / PROVENANCE_FILE).write_text(json.dumps(dataclasses.asdict(prov), indent=2) + "\n")
    _log(f"vllm/ provisioned from {archive} ({pin.short})")
    return prov


def tree_provenance(root: Path | None = None) -> Provenance:
    """The provenance of an already provisioned tree (never downloads)."""
    root = Path(root or REPO_ROOT)
    pin = load_pin(root)
    tree = root / TREE_DIR
    if (tree / ".git").exists():
        if _git_head(tree) != pin.commit:
            raise ProvisionError(f"{tree} is not at the pinned commit {pin.commit}; run: git submodule update --init vllm")
        return Provenance("submodule", pin.version, pin.commit)
    prov = _read_provenance(tree)
    if prov is None or prov.commit != pin.commit or prov.sdist_sha256 != pin.sdist_sha256:
        raise ProvisionError(f"{tree} is not provisioned at the pin v{pin.version}; run `make vllm` (or `python -m vllm_book.pin`)")
    return prov


def source_root(root: Path | None = None) -> Path:
    """Path of the provisioned tree (``vllm/`` holding ``vllm/``, ``csrc/``…).

    ``VLLM_BOOK_SRC`` overrides it (tests, impact on another release).
    """
    if env := os.environ.get("VLLM_BOOK_SRC"):
        return Path(env)
    root = Path(root or REPO_ROOT)
    tree_provenance(root)
    return root / TREE_DIR


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m vllm_book.pin", description="Provision the pinned vLLM tree into vllm/.")
    ap.add_argument("command", nargs="?", default="provision", choices=["provision", "show"])
    ap.add_argument("--root", type=Path, default=REPO_ROOT)
    args = ap.parse_args(argv)
    try:
        if args.command == "show":
            pin = load_pin(args.root)
            print(json.dumps({**dataclasses.asdict(pin), "path": str(pin.path)}, indent=2))
            return 0
        provision(args.root)
    except ProvisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
