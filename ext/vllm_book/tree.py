"""Is ``vllm/`` the tree the pin names?  The manifest, symlinks, ``_version.py`` (no Sphinx imports).

:func:`check_tree` is the one implementation ``make validate`` (check ``pin``)
and the build (:mod:`vllm_book.gate`, at ``config-inited``) both call; it
returns :class:`~vllm_book.problems.Problem` objects, each naming a file and
what to run.

The manifest
    Provisioning an sdist writes ``vllm/.vllm-book-manifest.json`` beside the
    provenance record: every file's path, size and sha256, taken from the
    sha256-verified archive itself (not from the unpacked files), plus the
    mtime each file had when its hash was last verified.  Verification is a
    cheap pass (``lstat`` of every file: ~50 ms for the 6,000 files of
    v0.26.0); a file whose size or mtime differs is re-hashed, and a file
    whose hash still matches gets its new mtime recorded (``touch`` costs one
    re-hash, once).  Missing, added and changed files are each named.
A tree provisioned before the manifest existed
    gets one on its next check, regenerated from the sdist in the download
    cache after that archive's sha256 is checked against the pin; every file
    is then hashed once.  Without the cached sdist the check says to run
    ``make vllm`` (which downloads it again and writes the manifest).
Symlinks
    A link anywhere in the tree whose target leaves the tree is refused
    (each one named): the index and the browser would otherwise read and
    publish files from outside the pinned tree.  Links that stay inside are
    reported only when the manifest does not list them.
A git submodule
    is checked by ``git rev-parse HEAD`` (the pin) and ``git status
    --porcelain`` (every changed or untracked file); it has no manifest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

from . import pin as pin_mod
from .fsutil import write_atomic
from .problems import Problem

MANIFEST_FILE = ".vllm-book-manifest.json"
MANIFEST_VERSION = 1
#: our own records in the tree, never part of the manifest
RECORDS = frozenset({pin_mod.PROVENANCE_FILE, MANIFEST_FILE})
#: directories that tools may create in a tree without changing what the book shows
IGNORED_DIRS = frozenset({"__pycache__"})
REPROVISION = "re-provision the tree: rm -rf vllm && make vllm (the sdist is reused from the download cache)"


@dataclasses.dataclass
class Entry:
    size: int
    sha256: str
    mtime_ns: int | None = None  # when the hash was last verified on disk
    link: str | None = None  # a symlink in the sdist: its target


def _sha256(path: Path) -> str:
    return pin_mod.sha256_file(path)


# --------------------------------------------------------------------------- writing


def sdist_entries(archive: Path) -> dict[str, Entry]:
    """Path → :class:`Entry` of every file of *archive* (its top directory stripped)."""
    out: dict[str, Entry] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for m in tar:
            parts = m.name.split("/", 1)
            if len(parts) < 2 or not parts[1]:
                continue
            rel = parts[1]
            if m.issym():
                out[rel] = Entry(0, "", None, m.linkname)
            elif m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                h = hashlib.sha256()
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
                out[rel] = Entry(m.size, h.hexdigest())
    return out


def manifest_path(tree: Path) -> Path:
    return Path(tree) / MANIFEST_FILE


def write_manifest(tree: Path, entries: dict[str, Entry], source: str) -> None:
    data = {
        "version": MANIFEST_VERSION,
        "source": source,
        "files": {p: dataclasses.asdict(e) for p, e in sorted(entries.items())},
    }
    write_atomic(manifest_path(tree), (json.dumps(data, indent=0, sort_keys=True) + "\n").encode())


def load_manifest(tree: Path) -> dict[str, Entry] | None:
    try:
        data = json.loads(manifest_path(tree).read_text(encoding="utf-8"))
        if data.get("version") != MANIFEST_VERSION:
            return None
        return {p: Entry(**e) for p, e in data["files"].items()}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def seal(tree: Path, entries: dict[str, Entry]) -> None:
    """Record the current mtime of every regular file whose size and hash match (after unpacking)."""
    for rel, e in entries.items():
        if e.link is not None:
            continue
        try:
            st = os.lstat(Path(tree) / rel)
        except OSError:
            continue
        if st.st_size == e.size and _sha256(Path(tree) / rel) == e.sha256:
            e.mtime_ns = st.st_mtime_ns


# --------------------------------------------------------------------------- reading the tree


def walk(tree: Path) -> tuple[dict[str, os.stat_result], dict[str, str]]:
    """(regular files → lstat, symlinks → target) under *tree*; never follows a link."""
    files: dict[str, os.stat_result] = {}
    links: dict[str, str] = {}
    stack = [("", str(tree))]
    while stack:
        prefix, d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                rel = prefix + e.name
                if e.is_symlink():
                    links[rel] = os.readlink(e.path)
                elif e.is_dir(follow_symlinks=False):
                    if e.name not in IGNORED_DIRS and not (not prefix and e.name == ".git"):
                        stack.append((rel + "/", e.path))
                elif e.is_file(follow_symlinks=False) and not (not prefix and e.name in RECORDS):
                    files[rel] = e.stat(follow_symlinks=False)
    return files, links


def escaping_links(tree: Path, links: dict[str, str] | None = None) -> list[tuple[str, str]]:
    """``[(link, resolved target)]`` of every symlink under *tree* whose target lies outside it."""
    tree = Path(tree)
    if links is None:
        _files, links = walk(tree)
    real = tree.resolve()
    out = []
    for rel in sorted(links):
        target = (tree / rel).resolve()
        if target != real and real not in target.parents:
            out.append((rel, str(target)))
    return out


def check_links(tree: Path, label: str = pin_mod.TREE_DIR, links: dict[str, str] | None = None) -> list[Problem]:
    """Symlinks leaving *tree* (also the top directory itself), for any tree the build reads."""
    tree = Path(tree)
    if tree.is_symlink():
        return [Problem(label, 1, f"{label} is a symbolic link to {tree.resolve()}; the tree must be a directory of its own",
                        REPROVISION, "tree")]
    return [Problem(f"{label}/{rel}", 1, f"{label}/{rel} is a symbolic link to {target}, outside the tree: the index and the "
                    "browser would read and publish files from outside the pinned tree", REPROVISION, "tree")
            for rel, target in escaping_links(tree, links)]


# --------------------------------------------------------------------------- verification


def verify(tree: Path, entries: dict[str, Entry], label: str = pin_mod.TREE_DIR,
           walked: tuple[dict[str, os.stat_result], dict[str, str]] | None = None) -> tuple[list[Problem], bool]:
    """Compare *tree* with its manifest.  Returns (problems, entries changed: mtimes newly verified)."""
    files, links = walked or walk(tree)
    out: list[Problem] = []
    sealed = False
    escaping = {rel for rel, _t in escaping_links(tree, links)}
    for rel in sorted(set(entries) | set(files) | set(links)):
        where = f"{label}/{rel}"
        e = entries.get(rel)
        if rel in escaping:
            continue  # reported by check_links
        if e is None:
            what = f"a symbolic link to {links[rel]}" if rel in links else "a file"
            out.append(Problem(where, 1, f"{where} is {what} that the pinned sdist does not contain (added after provisioning)",
                               f"remove it, or {REPROVISION}", "tree"))
            continue
        if e.link is not None:
            if links.get(rel) != e.link:
                out.append(Problem(where, 1, f"{where} should be a symbolic link to {e.link} (as in the sdist)", REPROVISION, "tree"))
            continue
        st = files.get(rel)
        if st is None:
            what = f"replaced by a symbolic link to {links[rel]}" if rel in links else "missing"
            out.append(Problem(where, 1, f"{where} is {what}; the pinned sdist has it ({e.size} bytes)", REPROVISION, "tree"))
            continue
        if st.st_size == e.size and st.st_mtime_ns == e.mtime_ns:
            continue
        digest = _sha256(Path(tree) / rel) if st.st_size == e.size else ""
        if digest == e.sha256:
            e.mtime_ns = st.st_mtime_ns
            sealed = True
            continue
        detail = f"size {st.st_size} bytes, the sdist's {e.size}" if st.st_size != e.size else f"sha256 {digest[:16]}…, the sdist's {e.sha256[:16]}…"
        out.append(Problem(where, 1, f"{where} differs from the pinned sdist ({detail}): it was edited after provisioning",
                           f"undo the edit, or {REPROVISION}", "tree"))
    return out, sealed


def regenerate_manifest(root: Path, pin: pin_mod.Pin) -> dict[str, Entry] | None:
    """The manifest of a tree provisioned before manifests existed, from the cached sdist (``None``: not cached).

    The cached archive's sha256 is checked against the pin first (raises
    :class:`~vllm_book.pin.ProvisionError` on a mismatch).
    """
    archive = pin_mod.cache_dir() / "sdist" / pin.sdist_filename
    if not archive.is_file():
        return None
    digest = pin_mod.sha256_file(archive)
    if digest != pin.sdist_sha256:
        raise pin_mod.ProvisionError(
            f"the cached {archive.name} is corrupt or has been tampered with: sha256 {digest}, "
            f"but {pin_mod.PIN_FILE} says {pin.sdist_sha256} ({archive})")
    entries = sdist_entries(archive)
    pin_mod._log(f"vllm/ has no manifest (provisioned before manifests existed): writing it from {archive}")
    return entries


def _version_problems(root: Path, pin: pin_mod.Pin) -> list[Problem]:
    vfile = Path(root) / pin_mod.TREE_DIR / "vllm" / "_version.py"
    label = f"{pin_mod.TREE_DIR}/vllm/_version.py"
    try:
        lines = vfile.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return [Problem(label, 1, f"{label} is missing, so the tree's commit cannot be checked against the pin", REPROVISION, "tree")]
    out = []
    for n, line in enumerate(lines, 1):
        mc = re.search(r"commit_id\s*[:=].*?['\"]g?([0-9a-f]{7,40})['\"]", line)
        if mc and not pin.commit.startswith(mc.group(1)):
            out.append(Problem(label, n, f"the tree in vllm/ was built from commit {mc.group(1)}, but {pin_mod.PIN_FILE} pins "
                               f"{pin.commit} (v{pin.version})", REPROVISION, "tree"))
        mv = re.search(r"^__version__\s*=\s*version\s*=\s*['\"]([^'\"]+)['\"]", line)
        if mv and mv.group(1) != pin.version:
            out.append(Problem(label, n, f"the tree in vllm/ is version {mv.group(1)}, but {pin_mod.PIN_FILE} pins {pin.version}",
                               REPROVISION, "tree"))
    return out


def _git_status(tree: Path) -> list[Problem]:
    try:
        out = subprocess.run(["git", "-C", str(tree), "status", "--porcelain"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        return [Problem(pin_mod.TREE_DIR, 1, f"`git status` failed in the vllm submodule ({exc})", "git submodule update --init vllm", "tree")]
    return [Problem(f"{pin_mod.TREE_DIR}/{line[3:]}", 1, f"{pin_mod.TREE_DIR}/{line[3:]} differs from the pinned commit (git status: {line[:2].strip()})",
                    "git -C vllm checkout -- . && git -C vllm clean -fd", "tree") for line in out.splitlines() if line.strip()]


def check_tree(root: Path, pin: pin_mod.Pin, *, pin_line: int = 1) -> list[Problem]:
    """Everything that must hold for ``<root>/vllm`` to be the pinned tree; ``[]`` when it is."""
    root = Path(root)
    tree = root / pin_mod.TREE_DIR
    pf = pin_mod.PIN_FILE
    if tree.is_symlink():
        return check_links(tree)
    if not tree.is_dir() or not any(tree.iterdir()):
        return [Problem(pf, pin_line, f"vllm/ is not provisioned (v{pin.version}, {pin.short} is pinned)", "run: make vllm", "tree")]
    if (tree / ".git").exists():
        try:
            pin_mod.tree_provenance(root)
        except pin_mod.ProvisionError as exc:
            return [Problem(pf, pin_line, str(exc).replace("\n", " "), "git submodule update --init vllm", "tree")]
        return check_links(tree) + _git_status(tree)
    prov_file = f"{pin_mod.TREE_DIR}/{pin_mod.PROVENANCE_FILE}"
    try:
        prov = pin_mod.tree_provenance(root)
    except pin_mod.ProvisionError:
        try:
            data = json.loads((tree / pin_mod.PROVENANCE_FILE).read_text())
        except (OSError, ValueError):
            return [Problem(pf, pin_line, "vllm/ holds files but no provenance record (and is not a git checkout)",
                            "move the files away (rm -rf vllm) and run: make vllm", "tree")]
        return [Problem(prov_file, 1, f"vllm/ was provisioned at another pin: its provenance record says v{data.get('version')} "
                        f"{str(data.get('commit'))[:10]} (sdist sha256 {str(data.get('sdist_sha256'))[:12]}…), {pf} pins "
                        f"v{pin.version} {pin.short} (sha256 {pin.sdist_sha256[:12]}…)",
                        "run: make vllm (it replaces a tree provisioned at another pin)", "tree")]
    walked = walk(tree)
    out = check_links(tree, links=walked[1]) + _version_problems(root, pin)
    entries = load_manifest(tree)
    if entries is None:
        try:
            entries = regenerate_manifest(root, pin)
        except pin_mod.ProvisionError as exc:
            archive = pin_mod.cache_dir() / "sdist" / pin.sdist_filename
            return out + [Problem(f"{pin_mod.TREE_DIR}/{MANIFEST_FILE}", 1, f"vllm/ has no manifest and it cannot be rebuilt: {exc}",
                                  f"delete the archive (rm {archive}) and run: make vllm (it downloads it again and checks "
                                  "its sha256)", "tree")]
        if entries is None:
            return out + [Problem(f"{pin_mod.TREE_DIR}/{MANIFEST_FILE}", 1,
                                  f"vllm/ has no manifest (it was provisioned before manifests existed) and "
                                  f"{pin.sdist_filename} is not in the download cache to rebuild it from",
                                  "run: make vllm (downloads the sdist again, checks its sha256 and writes the manifest)", "tree")]
        problems, _ = verify(tree, entries, walked=walked)
        try:
            write_manifest(tree, entries, f"regenerated from {pin.sdist_filename}")
        except OSError:
            pass  # a read-only tree: rebuilt again next time
        return out + problems
    problems, sealed = verify(tree, entries, walked=walked)
    if sealed:
        try:
            write_manifest(tree, entries, "sdist")
        except OSError:
            pass  # a read-only tree: the next check re-hashes those files again
    return out + problems
