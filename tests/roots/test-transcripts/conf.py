# Test root of vllm_book.transcripts: a fake tool run during the build.
import os

extensions = ["myst_parser", "vllm_book.transcripts"]
language = "zh_CN"
exclude_patterns = ["_build", "tool", "fixtures"]
vllm_book_repo_root = os.path.dirname(__file__)
vllm_book_transcript_programs = {"fakecli": "fakecli"}
vllm_book_transcript_pythonpath = ["tool"]
