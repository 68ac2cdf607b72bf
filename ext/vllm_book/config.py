"""Every ``vllm_book_*`` config value, typed, in one place.

Sub-extensions read them from ``app.config``; none registers its own.
"""

from __future__ import annotations

from sphinx.application import Sphinx

#: (name, default, rebuild, types, description)
CONFIG_VALUES: list[tuple[str, object, str, tuple[type, ...], str]] = [
    ("vllm_book_repo_root", "", "env", (str,), "repository root (defaults to the directory of conf.py)"),
    ("vllm_book_confdir", "", "", (str,), "set by the extension at config-inited: the directory of conf.py (read-only)"),
    ("vllm_book_src_root", "", "env", (str,), "the provisioned vLLM tree (defaults to <repo>/vllm via vllm_book.pin)"),
    ("vllm_book_browser", True, "html", (bool,), "render the source browser in HTML builds"),
    ("vllm_book_browser_prefix", "_src", "html", (str,), "output sub-directory of the source browser"),
    ("vllm_book_browser_jobs", 0, "", (int,), "source browser worker processes (0 = one per CPU, in-process for < 16 pages; 1 = in-process)"),
    ("vllm_book_browser_dirs", ["vllm", "csrc"], "env", (list,), "top-level directories of the tree that are browsable and anchorable"),
    ("vllm_book_online_base", "https://vllm-learning-book.readthedocs.io/zh-cn/latest/", "env", (str,),
     "base URL of the online HTML edition; EPUB/PDF anchors link to its source browser"),
    ("vllm_book_cache_dir", "", "env", (str,), "cache for the index and highlighted pages (defaults to <repo>/_build/.cache)"),
    ("vllm_book_chapter_sections", ["小结", "自检", "下一步"], "env", (list,), "H2 sections every chapter must have"),
    ("vllm_book_chapter_pattern", r"^\d{2}-[a-z-]+/\d{2}[a-z]?-", "env", (str,), "docnames that are chapters"),
    ("vllm_book_cjk_chars_per_minute", 300, "env", (int,), "reading speed for CJK text (耗时 estimate)"),
    ("vllm_book_words_per_minute", 200, "env", (int,), "reading speed for Latin words"),
    ("vllm_book_code_lines_per_minute", 20, "env", (int,), "reading speed for code lines"),
    ("vllm_book_curriculum", "curriculum.toml", "env", (str,), "the curriculum file, relative to the conf dir"),
    ("vllm_book_node_modules", "", "", (str,),
     "node_modules holding the pinned mermaid the build parses diagrams with (default <repo>/node_modules)"),
    ("vllm_book_mermaid_cli", "", "", (str,), "mermaid-cli for EPUB/PDF diagrams (default <repo>/node_modules/.bin/mmdc)"),
    ("vllm_book_chromium", "", "", (str,), "chromium for mermaid-cli (default: $PUPPETEER_EXECUTABLE_PATH, then chromium on PATH)"),
    ("vllm_book_mermaid_jobs", 0, "", (int,),
     "mermaid-cli processes (one browser each) rendering diagrams at once (0 = one per CPU, at most 4)"),
    ("vllm_book_mermaid_scale", 2, "", (int,), "pixel scale of the PNG diagrams of the EPUB"),
    ("vllm_book_mermaid_formats", ["pdf", "png"], "", (list, tuple),
     "image formats drawn together whenever a diagram is drawn (pdf: the PDF, png: the EPUB), so the first "
     "EPUB or PDF build draws them for the other too; the building format is always drawn"),
    ("vllm_book_search_synonyms", "", "html", (str,),
     "TOML file of search synonym groups (groups = [[word, ...], ...]), relative to the conf dir; '' = none"),
    ("vllm_book_landmarks", "source/_data/landmarks.toml", "env", (str,),
     "the repository landmarks data file of the {landmarks} directive, relative to vllm_book_repo_root (or the source dir)"),
    ("vllm_book_impact_report", "", "env", (str,),
     "impact report JSON behind the 版本漂移 card field and the drift page ('' = the newest docs/impact-*-to-*.json)"),
    ("vllm_book_drills", "source/_data/drills.toml", "env", (str,),
     "calculation drills of the {drill} directive (inputs, formula, answer), relative to the repository root"),
    ("vllm_book_transcript_programs", {"vllm-doctor": "vllm_doctor"}, "env", (dict,),
     "cli-transcript: program name shown → module run with python -m (nothing else runs)"),
    ("vllm_book_transcript_pythonpath", ["doctor"], "env", (list,),
     "cli-transcript: directories (relative to the repository root) put on PYTHONPATH; the pages depend on their files"),
    ("vllm_book_transcript_epoch", 1764547200, "env", (int,),
     "cli-transcript: SOURCE_DATE_EPOCH of the commands (2025-12-01 00:00 UTC), so 'generated at' lines never change"),
    ("vllm_book_drift_page", "guide/drift", "env", (str,), "docname of the drift page the card links to ('' = no link)"),
    ("vllm_book_intl_language", "en", "env", (str,),
     "the translated edition's language: its catalogs are counted, its incomplete pages get a banner"),
    ("vllm_book_intl_source_language", "zh_CN", "env", (str,), "the language the book is written in"),
    ("vllm_book_editions", {"zh_CN": "html", "en": "en/html"}, "html", (dict,),
     "language → its HTML edition: a directory under the build dir (links between editions are relative) "
     "or a base URL (https://…/ or /…/)"),
    ("vllm_book_online_editions", {"zh_CN": "https://vllm-learning-book.readthedocs.io/zh-cn/latest/",
                                   "en": "https://vllm-learning-book.readthedocs.io/en/latest/"}, "env", (dict,),
     "language → online base URL of its HTML edition (EPUB/PDF links to the other edition)"),
    ("vllm_book_review_file", "content-review.toml", "env", (str,),
     "chapter review records (header card 复核 field), relative to vllm_book_repo_root or the source dir"),
]


def setup(app: Sphinx) -> dict[str, object]:
    for name, default, rebuild, types, description in CONFIG_VALUES:
        app.add_config_value(name, default, rebuild, types, description=description)
    app.connect("config-inited", _note_confdir)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _note_confdir(app: Sphinx, config) -> None:
    config.vllm_book_confdir = str(app.confdir)


def repo_root(config) -> str:
    """``vllm_book_repo_root``, else the directory of ``conf.py`` (for directives, which have no ``app``)."""
    return config.vllm_book_repo_root or config.vllm_book_confdir
