# A Mermaid diagram that does not parse: EPUB/PDF builds must fail with file:line.
project = "坏图"
author = "测试作者"
copyright = "2026, 测试作者"
version = "0"
language = "zh_CN"
extensions = ["myst_parser", "sphinxcontrib.mermaid", "vllm_book.config", "vllm_book.formats"]
epub_basename = "broken"
epub_uid = "broken-book"
epub_identifier = epub_uid
