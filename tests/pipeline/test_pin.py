"""Provisioning: hash verification, commit check, idempotence, clear errors."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from vllm_book import pin as pin_mod
from vllm_book.pin import ProvisionError

COMMIT = "f2654939e69b4069b13977e9aef3e31d4dcaf051"


def make_sdist(path: Path, commit_id: str = "gf2654939e") -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in {
            "vllm-0.26.0/vllm/_version.py": f"__commit_id__ = commit_id = '{commit_id}'\n",
            "vllm-0.26.0/vllm/__init__.py": "",
            "vllm-0.26.0/csrc/ops.h": "void f();\n",
        }.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    cache = tmp_path / "cache"
    (cache / "sdist").mkdir(parents=True)
    monkeypatch.setenv("VLLM_BOOK_CACHE", str(cache))
    monkeypatch.delenv("VLLM_BOOK_SRC", raising=False)
    root = tmp_path / "repo"
    (root / "vllm").mkdir(parents=True)
    return root, cache / "sdist" / "vllm-0.26.0.tar.gz"


def write_pin(root: Path, sha: str, commit: str = COMMIT) -> None:
    (root / "vllm-pin.toml").write_text(
        f'[vllm]\nversion = "0.26.0"\ncommit = "{commit}"\nrepository = "https://github.com/vllm-project/vllm"\n'
        f'[vllm.sdist]\nfilename = "vllm-0.26.0.tar.gz"\nsha256 = "{sha}"\nindex = "http://127.0.0.1:9/simple/vllm/"\n'
    )


def test_provisions_from_cached_sdist_and_records_provenance(repo):
    root, archive = repo
    write_pin(root, make_sdist(archive))
    prov = pin_mod.provision(root, quiet=True)
    assert prov.source == "sdist" and prov.commit == COMMIT
    assert (root / "vllm" / "vllm" / "_version.py").is_file()
    record = json.loads((root / "vllm" / pin_mod.PROVENANCE_FILE).read_text())
    assert record["sdist_sha256"] == prov.sdist_sha256
    assert pin_mod.source_root(root) == root / "vllm"
    # second call: nothing is downloaded or unpacked again
    archive.unlink()
    assert pin_mod.provision(root, quiet=True).provisioned_at == prov.provisioned_at


def test_rejects_tampered_archive(repo):
    root, archive = repo
    good = make_sdist(archive)
    write_pin(root, good)
    data = bytearray(archive.read_bytes())
    data[-10] ^= 0xFF  # flip a byte: the hash no longer matches
    archive.write_bytes(bytes(data))
    with pytest.raises(ProvisionError) as err:
        pin_mod.provision(root, quiet=True)
    msg = str(err.value)
    assert "sha256 mismatch" in msg and good in msg and "rm " in msg
    assert not (root / "vllm" / "vllm").exists()


def test_rejects_sdist_of_another_commit(repo):
    root, archive = repo
    write_pin(root, make_sdist(archive, commit_id="gdeadbeef0"))
    with pytest.raises(ProvisionError, match="built from commit deadbeef0.*pin says f2654939e6"):
        pin_mod.provision(root, quiet=True)


def test_rejects_submodule_at_wrong_commit(repo):
    root, archive = repo
    write_pin(root, make_sdist(archive))
    tree = root / "vllm"
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "x"], check=True)
    with pytest.raises(ProvisionError, match="git submodule update --init vllm"):
        pin_mod.provision(root, quiet=True)


def test_unprovisioned_tree_is_reported(repo):
    root, archive = repo
    write_pin(root, make_sdist(archive))
    with pytest.raises(ProvisionError, match="make vllm"):
        pin_mod.source_root(root)


def test_malformed_pin_names_the_file(repo):
    root, _ = repo
    (root / "vllm-pin.toml").write_text('[vllm]\nversion = "0.26.0"\n')
    with pytest.raises(ProvisionError, match="vllm-pin.toml: malformed pin"):
        pin_mod.load_pin(root)


def test_real_pin_matches_the_design():
    pin = pin_mod.load_pin()
    assert pin.commit == COMMIT and pin.version == "0.26.0"
    assert pin.sdist_sha256 == "23e9fa19d7e20ce7dcc1c074d41503e2116d23f19e688f5d5ea91b741f958502"
    gitlink = subprocess.run(["git", "ls-files", "-s", "vllm"], capture_output=True, text=True,
                             cwd=pin.path.parent).stdout.split()
    assert gitlink[:2] == ["160000", COMMIT]


def test_real_conf_puts_no_absolute_path_into_buildinfo():
    """``.buildinfo`` hashes the ``html``-category config values; an absolute path there differs per clone.

    (tests/faults/test_reproducible.py builds a small book from two paths; this checks the real conf.py.)
    """
    from sphinx.config import Config
    from sphinx.util.tags import Tags

    from vllm_book.config import CONFIG_VALUES

    repo = Path(__file__).resolve().parents[2]
    cfg = Config.read(repo, overrides={}, tags=Tags())
    ours = {name for name, _default, rebuild, *_ in CONFIG_VALUES if rebuild == "html"}
    hashed = {k: v for k, v in cfg._raw_config.items() if k.startswith(("html_", "mermaid_")) or k in ours}
    assert "html_search_options" in hashed
    assert not [k for k, v in hashed.items() if str(repo) in repr(v)]
