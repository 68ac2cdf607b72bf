import os

extensions = ["myst_parser", "vllm_book.config", "vllm_book.anchors", "vllm_book.search"]
language = "zh_CN"
html_search_language = "zh"
html_search_options = {"dict": os.path.join(os.path.dirname(os.path.abspath(__file__)), "jieba-test.txt")}
vllm_book_src_root = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "fake-vllm"))
vllm_book_search_synonyms = "synonyms.toml"
exclude_patterns = ["_build"]
