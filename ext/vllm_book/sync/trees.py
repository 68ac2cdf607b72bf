"""Candidate release trees for ``impact``/``refresh``, unpacked beside the download cache.

``~/.cache/vllm-book/trees/vllm-<version>/`` (``$VLLM_BOOK_CACHE/trees/…``)
holds the unpacked sdist and a provenance record with the sha256 the index
published for it; a second run reuses it without touching the network.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

from .. import pin as pin_mod
from .common import log

RECORD = pin_mod.PROVENANCE_FILE
VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?(?:(?:rc|a|b|\.post|\.dev)\d+)*$")


@dataclasses.dataclass(frozen=True)
class ReleaseTree:
    version: str
    path: Path
    sdist_filename: str
    sdist_sha256: str
    sdist_url: str
    commit_abbrev: str  # from vllm/_version.py (the sdist records no full SHA)


def trees_dir() -> Path:
    return pin_mod.cache_dir() / "trees"


def release_tree(version: str, index: str = "https://pypi.org/simple/vllm/") -> ReleaseTree:
    """Download (sha256-verified against the index) and unpack release *version*, or reuse it."""
    version = version.removeprefix("v")
    if not VERSION.match(version):
        raise pin_mod.ProvisionError(f"{version!r} is not a vLLM release number (e.g. 0.33.0)")
    dest = trees_dir() / f"vllm-{version}"
    rec = dest / RECORD
    if rec.is_file():
        try:
            data = json.loads(rec.read_text())
            log(f"using the unpacked {dest} (sha256 {data['sdist_sha256'][:12]}… verified when unpacked)")
            return ReleaseTree(version, dest, data["sdist_filename"], data["sdist_sha256"], data.get("sdist_url", ""),
                               data["commit_abbrev"])
        except (OSError, ValueError, KeyError):
            pass
    filename = f"vllm-{version}.tar.gz"
    archive, digest, url = pin_mod.fetch_sdist(filename, index, None)
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    commit = pin_mod.unpack_sdist(archive, partial, None)
    tree = ReleaseTree(version, dest, filename, digest, url, commit)
    (partial / RECORD).write_text(json.dumps({
        "source": "sdist", "version": version, "sdist_filename": filename, "sdist_sha256": digest,
        "sdist_url": url, "commit_abbrev": commit,
        "unpacked_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }, indent=2) + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    log(f"unpacked {filename} into {dest} (commit {commit})")
    return tree
