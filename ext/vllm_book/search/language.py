"""The ``zh`` search language of Sphinx's own index (searchindex.js): jieba, a query splitter, a working stemmer.

Sphinx's own ``zh`` search language already cuts the text with jieba when it
is installed, and loads ``html_search_options["dict"]`` as a jieba user
dictionary (our vLLM terms: ``source/_data/jieba-vllm.txt``).  What it lacks
is the query side: the browser splits a query only at non-letters, so
``连续批处理调度`` stays one term and finds nothing.  ``SearchChineseBook``
ships a ``splitQuery`` that cuts each CJK run by forward maximum matching
against the terms of the loaded index, and keeps Latin words as they are.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.search.zh import SearchChinese

SPLITTER_JS = r"""
var splitQuery = (query) => {
  const terms = [];
  const words = query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu).filter((t) => t);
  const index = (typeof Search !== "undefined" && Search._index) ? Search._index.terms : null;
  const cjk = /[\u3400-\u9fff\uf900-\ufaff]+|[^\u3400-\u9fff\uf900-\ufaff]+/gu;
  for (const word of words) {
    for (const run of word.match(cjk) || []) {
      if (!/[\u3400-\u9fff\uf900-\ufaff]/u.test(run) || !index) { terms.push(run); continue; }
      // forward maximum matching against the terms that jieba put in the index
      let i = 0;
      while (i < run.length) {
        let j = Math.min(run.length, i + 8);
        while (j > i + 1 && !(run.slice(i, j) in index)) j--;
        terms.push(run.slice(i, j));
        i = j;
      }
    }
  }
  return terms;
};
"""


def english_stemmer_sources() -> tuple[str, str]:
    """Sphinx's minified ``base-stemmer.js`` and ``english-stemmer.js`` (Snowball English, as the index uses)."""
    import sphinx.search

    minified = Path(sphinx.search.__file__).resolve().parent / "minified-js"
    return ((minified / "base-stemmer.js").read_text(encoding="utf-8"),
            (minified / "english-stemmer.js").read_text(encoding="utf-8"))


class SearchChineseBook(SearchChinese):
    """``zh`` search with a query splitter that understands Chinese and a stemmer that loads.

    Sphinx 9.0.4's ``zh`` language ships the English stemmer but binds it as
    ``window.Stemmer = ChineseStemmer;`` (named after ``language_name``), so every
    query on the Chinese edition died with ``ReferenceError: ChineseStemmer is not
    defined`` (sphinx-doc/sphinx#14229, fixed upstream by #14416, unreleased at 9.0.4).
    We inline the same stemmer with the right name instead of asking Sphinx to.

    A relative ``html_search_options['dict']`` is taken from the conf dir (set at
    ``builder-inited``), so ``conf.py`` holds no absolute path: ``html_*`` values
    are hashed into ``.buildinfo``, which must not differ between two clones.
    """

    js_splitter_code = SPLITTER_JS
    js_stemmer_rawcode = ""
    js_stemmer_code = "\n".join((*english_stemmer_sources(), "window.Stemmer = EnglishStemmer;"))
    base_dir = ""

    def __init__(self, options: dict[str, str]) -> None:
        path = options.get("dict")
        if path and self.base_dir and not Path(path).is_absolute():
            options = {**options, "dict": str(Path(self.base_dir) / path)}
        super().__init__(options)


def dict_path(app) -> Path | None:
    """The book's jieba dictionary (``html_search_options['dict']``, relative to the conf dir)."""
    path = app.config.html_search_options.get("dict")
    return (Path(app.confdir) / path) if path else None
