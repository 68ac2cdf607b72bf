extensions = ["myst_parser", "sphinx_design", "sphinxcontrib.mermaid", "vllm_book.config", "vllm_book.toc", "vllm_book.chapters",
              "vllm_book.search"]
language = "zh_CN"
html_search_language = "zh"
myst_enable_extensions = ["colon_fence"]
import os
html_search_options = {"dict": os.path.join(os.path.dirname(__file__), "jieba-test.txt")}
