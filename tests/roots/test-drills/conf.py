import os

extensions = ["myst_parser", "vllm_book.drills"]
language = "zh_CN"
exclude_patterns = ["_build", "_data"]
vllm_book_repo_root = os.path.dirname(__file__)
vllm_book_drills = "_data/drills.toml"
