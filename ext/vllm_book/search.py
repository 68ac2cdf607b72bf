"""Chinese full-text search: jieba on the index side, segmentation on the query side.

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

from sphinx.application import Sphinx
from sphinx.search.zh import SearchChinese
from sphinx.util import logging

logger = logging.getLogger(__name__)

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


class SearchChineseBook(SearchChinese):
    """``zh`` search with a query splitter that understands Chinese.

    A relative ``html_search_options['dict']`` is taken from the conf dir (set at
    ``builder-inited``), so ``conf.py`` holds no absolute path: ``html_*`` values
    are hashed into ``.buildinfo``, which must not differ between two clones.
    """

    js_splitter_code = SPLITTER_JS
    base_dir = ""

    def __init__(self, options: dict[str, str]) -> None:
        path = options.get("dict")
        if path and self.base_dir and not Path(path).is_absolute():
            options = {**options, "dict": str(Path(self.base_dir) / path)}
        super().__init__(options)


def dict_path(app: Sphinx) -> Path | None:
    path = app.config.html_search_options.get("dict")
    return (Path(app.confdir) / path) if path else None


def _check_dict(app: Sphinx) -> None:
    if not app.config.language.startswith("zh"):
        return
    SearchChineseBook.base_dir = str(app.confdir)
    path = dict_path(app)
    if path and not path.is_file():
        logger.warning("html_search_options['dict'] = %r does not exist; jieba uses its default dictionary",
                       path, type="vllm_book", subtype="search")


def setup(app: Sphinx) -> dict[str, object]:
    app.add_search_language(SearchChineseBook)
    app.connect("builder-inited", _check_dict)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
