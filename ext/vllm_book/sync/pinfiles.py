"""The files that restate the pin: the README block and ``vllm-pin.toml`` itself."""

from __future__ import annotations

import re
from pathlib import Path

from ..pin import Pin

BEGIN = "<!-- vllm-pin:begin"
END = "<!-- vllm-pin:end -->"
BEGIN_LINE = "<!-- vllm-pin:begin (written by `make refresh`; checked by `make validate`) -->"


def readme_block(pin: Pin) -> list[str]:
    """The lines ``refresh`` writes between the markers."""
    return [
        "| | |",
        "|---|---|",
        f"| vLLM 版本 | **v{pin.version}** |",
        f"| 锁定 commit | `{pin.commit}` |",
        f"| sdist | `{pin.sdist_filename}`, sha256 `{pin.sdist_sha256}` |",
    ]


class BlockError(ValueError):
    def __init__(self, line: int, message: str, fix: str) -> None:
        super().__init__(message)
        self.line, self.message, self.fix = line, message, fix


def _markers(lines: list[str]) -> tuple[int, int]:
    begins = [i for i, line in enumerate(lines) if line.strip().startswith(BEGIN)]
    ends = [i for i, line in enumerate(lines) if line.strip() == END]
    fix = f"put the block back: a line starting with `{BEGIN}`, the pin table, and a line `{END}`; then run python -m vllm_book.sync readme --write"
    if not begins or not ends:
        raise BlockError(1, f"no vllm-pin block (missing {'begin' if not begins else 'end'} marker)", fix)
    if len(begins) > 1 or len(ends) > 1:
        raise BlockError((begins[1] if len(begins) > 1 else ends[1]) + 1, "more than one vllm-pin marker", "keep one block")
    if ends[0] < begins[0]:
        raise BlockError(ends[0] + 1, "the vllm-pin end marker comes before the begin marker", fix)
    return begins[0], ends[0]


def check_readme(readme: Path, pin: Pin) -> list[tuple[int, str, str]]:
    """``(line, message, fix)`` when the block differs from what ``refresh`` would write."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    try:
        b, e = _markers(lines)
    except BlockError as exc:
        return [(exc.line, exc.message, exc.fix)]
    have = lines[b + 1 : e]
    want = readme_block(pin)
    if have == want:
        return []
    fix = "run: python -m vllm_book.sync readme --write (the block is generated from vllm-pin.toml; never edit it by hand)"
    for k in range(max(len(have), len(want))):
        h = have[k] if k < len(have) else "<nothing>"
        w = want[k] if k < len(want) else "<nothing>"
        if h != w:
            return [(b + 2 + k, f"the vllm-pin block is stale: this line is {h!r}, vllm-pin.toml gives {w!r}", fix)]
    return []  # pragma: no cover


def write_readme(readme: Path, pin: Pin) -> bool:
    text = readme.read_text(encoding="utf-8")
    lines = text.splitlines()
    b, e = _markers(lines)
    new = lines[: b + 1] + readme_block(pin) + lines[e:]
    out = "\n".join(new) + ("\n" if text.endswith("\n") else "")
    if out == text:
        return False
    readme.write_text(out, encoding="utf-8")
    return True


def rewrite_pin(path: Path, *, version: str, commit: str, filename: str, sha256: str) -> None:
    """Change the values in ``vllm-pin.toml``, keeping its comments and layout."""
    text = path.read_text(encoding="utf-8")
    section = None
    out = []
    done = set()
    for line in text.splitlines(keepends=True):
        s = line.strip()
        if s.startswith("["):
            section = s
        m = re.match(r'^(\s*)(\w+)(\s*=\s*)"[^"]*"(.*)$', line.rstrip("\n"))
        if m:
            key = (section, m.group(2))
            value = {
                ("[vllm]", "version"): version,
                ("[vllm]", "commit"): commit,
                ("[vllm.sdist]", "filename"): filename,
                ("[vllm.sdist]", "sha256"): sha256,
            }.get(key)
            if value is not None:
                line = f'{m.group(1)}{m.group(2)}{m.group(3)}"{value}"{m.group(4)}' + ("\n" if line.endswith("\n") else "")
                done.add(key)
        out.append(line)
    if len(done) != 4:
        raise ValueError(f"{path}: could not find version/commit/filename/sha256 to rewrite (found {sorted(done)})")
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text("".join(out), encoding="utf-8")
    tmp.replace(path)
