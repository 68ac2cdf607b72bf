"""Search of the HTML editions.

Two layers, both built from the same text:

- Sphinx's own ``searchindex.js``, with our ``zh`` language (:mod:`.language`): jieba and the book's
  dictionary on the index side, a Chinese query splitter and a stemmer that loads (Sphinx 9.0.4's ``zh``
  search throws ``ChineseStemmer is not defined``);
- the book's ranking (:mod:`.collect`, :mod:`.index`, ``static/booksearch.js``): a BM25F index over
  titles, section titles, cited symbols, code and prose, with phrase matches on titles and typo-tolerant
  symbol lookup, which replaces Sphinx's scoring on the search page.  Why not Sphinx's scorer or Pagefind:
  ``docs/decisions.md``.
"""

from __future__ import annotations

from sphinx.application import Sphinx
from sphinx.util import logging

from . import collect, index, tokens
from .language import SearchChineseBook, dict_path

logger = logging.getLogger(__name__)


def _check_dict(app: Sphinx) -> None:
    SearchChineseBook.base_dir = str(app.confdir)
    path = dict_path(app)
    if path and not path.is_file():
        logger.warning("html_search_options['dict'] = %r does not exist; jieba uses its default dictionary. "
                       "Fix: point it at source/_data/jieba-vllm.txt", path, type="vllm_book", subtype="search")


def setup(app: Sphinx) -> dict[str, object]:
    app.add_search_language(SearchChineseBook)
    app.connect("builder-inited", _check_dict)
    app.connect("doctree-read", collect.on_doctree_read)
    app.connect("env-purge-doc", collect.on_purge_doc)
    app.connect("env-merge-info", collect.on_merge_info)
    app.connect("html-page-context", index.add_scripts)
    app.connect("build-finished", index.write)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": tokens.VERSION}
