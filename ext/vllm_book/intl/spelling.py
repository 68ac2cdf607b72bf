"""Spelling of the English edition's prose: a US English dictionary plus the project's word list.

The dictionary is pyspellchecker's English word list (a pinned dependency, no network, no system package);
the project list is ``locale/en/wordlist.txt``: one word per line, ``#`` comments, matched case-insensitively —
vLLM identifiers and inference terms the dictionary lacks (prefill, tokenizer, detokenize…).

What is checked is what a reader reads (:func:`vllm_book.intl.markup.prose`): link text yes; code, math,
anchor targets and URLs no.  A word is skipped when it is an identifier rather than English: it has a digit,
``_``, ``.``, ``/`` or ``::`` in it, is all capitals (an acronym: TTFT, KV), or has a capital after its first
letter (vLLM, PagedAttention, FlashInfer).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from .markup import prose

WORDLIST = Path("locale") / "en" / "wordlist.txt"
_RUN = re.compile(r"[A-Za-z0-9_'’./:+-]+")
_IDENT = re.compile(r"[0-9_./:+]")


@functools.lru_cache(maxsize=1)
def _dictionary() -> frozenset[str]:
    from spellchecker import SpellChecker

    return frozenset(SpellChecker(language="en", distance=1).word_frequency.dictionary)


def load_wordlist(path: Path) -> tuple[frozenset[str], list[tuple[int, str]]]:
    """The project words (lower case), and ``(line, problem)`` for entries that are not one word."""
    words, bad = set(), []
    if not path.is_file():
        return frozenset(), []
    for no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        w = raw.split("#", 1)[0].strip()
        if not w:
            continue
        if " " in w:
            bad.append((no, f"word list entry {w!r} is more than one word"))
            continue
        words.add(w.lower())
    return frozenset(words), bad


def words(text: str) -> list[str]:
    """The English words of *text* that are checked (identifiers and acronyms left out)."""
    out = []
    for run in _RUN.findall(prose(text)):
        run = run.strip(".:-'’+/")
        if not run or _IDENT.search(run):
            continue
        for part in run.split("-"):
            part = part.strip("'’")
            if re.search(r"n['’]t$", part):  # doesn't → does, can't → can
                part = part[:-3] if part[:-3].lower() not in ("ca", "wo", "sha") else part[:-2]
            part = re.sub(r"['’](s|d|ll|re|ve|m)$", "", part)
            if len(part) < 2 or part.isupper() or any(c.isupper() for c in part[1:]):
                continue
            out.append(part)
    return out


def misspelt(text: str, project: frozenset[str]) -> list[str]:
    """Words of *text* in neither the dictionary nor the project list, in order, each once."""
    known = _dictionary()
    seen: dict[str, None] = {}
    for w in words(text):
        lw = w.lower()
        if lw in known or lw in project:
            continue
        if lw.endswith("s") and (lw[:-1] in known or lw[:-1] in project):
            continue  # plurals of listed terms (prefills, tokenizers)
        seen.setdefault(w, None)
    return list(seen)
