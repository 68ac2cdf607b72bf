"""Keep the book true to its pinned vLLM: ``validate``, ``impact``, ``refresh``.

No Sphinx imports except :mod:`.card` (the header card's 复核 field).  The CLI
is ``python -m vllm_book.sync`` (see :mod:`.__main__`); the workflow is in
``docs/source-sync.md``.
"""
