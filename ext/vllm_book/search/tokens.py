"""The book search's tokenizer: one definition of a term, for the index (here) and the query (booksearch.js).

A *term* is one of:

- a **compound**: a Latin word with inner ``_ . -`` or a camel-case hump (``hash_block_tokens``,
  ``Scheduler.schedule``, ``KVCacheManager``, ``--max-num-seqs``), lower-cased whole, unstemmed;
- a **component** of a dotted compound that is a compound itself (``gpumodelrunner`` and ``execute_model``
  of ``GPUModelRunner.execute_model``), lower-cased, unstemmed;
- a **part**: each piece of a Latin word (split at ``_ . -`` and camel humps), lower-cased and stemmed with
  Snowball English (the stemmer Sphinx ships for both languages), without English stop words, digits or
  one-letter pieces;
- a **CJK word**: what jieba's ``cut_for_search`` (with the book's dictionary ``source/_data/jieba-vllm.txt``)
  yields for a run of Chinese characters, two characters or longer.

``booksearch.js`` cuts a query the same way for Latin text (same regular expressions, same stemmer);
a Chinese query is cut by forward maximum matching against the index's CJK words, which jieba made.
Both sides are checked against each other in ``tests/search/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import snowballstemmer
from sphinx.search._stopwords.en import ENGLISH_STOPWORDS

#: bump when what a term is changes: the environment (which holds every document's terms) is then re-read
VERSION = 3

#: a Latin word: starts with a letter or digit, may contain ``_ . -`` inside
LATIN_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
#: CJK unified ideographs (+ extension A and compatibility ideographs)
CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
SEPARATORS = re.compile(r"[._\-]+")
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

_stemmer = snowballstemmer.stemmer("english")
_jieba_dict: str | None = None


def stem(word: str) -> str:
    return _stemmer.stemWord(word)


def latin_terms(word: str) -> list[str]:
    """Terms of one Latin word (see the module docstring); the compound first when there is one."""
    word = word.strip("._-")
    if not word:
        return []
    parts = [p for chunk in SEPARATORS.split(word) for p in CAMEL.findall(chunk)]
    out = [word.lower()] if len(parts) > 1 else []
    # a qualified name also names its components: GPUModelRunner.execute_model → gpumodelrunner, execute_model
    dotted = [c for c in word.split(".") if c]
    if len(dotted) > 1:
        out += [c.lower() for c in dotted if len(SEPARATORS.split(c)) > 1 or len(CAMEL.findall(c)) > 1]
    for part in parts:
        low = part.lower()
        if len(low) < 2 or low.isdigit() or low in ENGLISH_STOPWORDS:
            continue
        out.append(stem(low))
    return out


def use_dictionary(path: str | Path | None) -> None:
    """Load the book's jieba user dictionary once per process (jieba's state is global)."""
    global _jieba_dict
    key = str(path or "")
    if _jieba_dict == key:
        return
    import jieba

    jieba.setLogLevel(60)
    if key and Path(key).is_file():
        jieba.load_userdict(key)
    _jieba_dict = key


def cjk_terms(run: str) -> list[str]:
    from jieba import cut_for_search

    return [w for w in cut_for_search(run) if len(w) >= 2 and CJK_RUN.fullmatch(w)]


def terms(text: str) -> Iterator[str]:
    """Every term of *text*, in order (repeats kept: the caller counts them)."""
    for m in re.finditer(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+|[A-Za-z0-9][A-Za-z0-9_.\-]*", text):
        piece = m.group(0)
        if CJK_RUN.match(piece):
            yield from cjk_terms(piece)
        else:
            yield from latin_terms(piece)


def normalize(text: str) -> str:
    """The form titles and queries are compared in for phrase matches: lower case, letters/digits/CJK only."""
    return re.sub(r"[^0-9a-z\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+", "", text.lower())
