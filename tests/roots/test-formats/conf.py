# Test root of vllm_book.formats: EPUB and PDF of a one-chapter Chinese book.
# The tests point vllm_book_src_root at tests/roots/fake-vllm and set the cache dir.
project = "格式测试手册"
author = "测试作者"
copyright = "2026, 测试作者"
version = "vLLM 0.0.1"
release = "vLLM 0.0.1 (test)"
language = "zh_CN"
extensions = ["myst_parser", "sphinx_design", "sphinxcontrib.mermaid", "vllm_book.config", "vllm_book.chapters",
              "vllm_book.anchors", "vllm_book.formats"]
myst_enable_extensions = ["colon_fence", "dollarmath"]
exclude_patterns = ["_build", "**/downloads"]
vllm_book_online_base = "https://book.example/zh-cn/latest/"
epub_basename = "formats-test"
epub_language = "zh-CN"
epub_uid = "formats-test-book"
epub_identifier = epub_uid
epub_scheme = "uid"
epub_show_urls = "no"
