"""The 复核 field of the header card (the ``vllm-book-card`` handler in ``vllm_book.sync.card``)."""

from __future__ import annotations

import re
import shutil

import pytest
from sync_helpers import ROOTS, V1_SHA, V2_SHA
from vllm_book.pin import Pin
from vllm_book.sync.card import review_text
from vllm_book.sync.review import Record

PIN = Pin("0.1.0", V1_SHA, "https://github.com/vllm-project/vllm", "vllm-0.1.0.tar.gz", "0" * 64, "", None)  # type: ignore[arg-type]
PIN2 = Pin("0.2.0", V2_SHA, "https://github.com/vllm-project/vllm", "vllm-0.2.0.tar.gz", "0" * 64, "", None)  # type: ignore[arg-type]


def reviewed(commit: str, carried: str = "") -> Record:
    return Record("x", "reviewed", commit, "2026-12-01T09:30:00Z", True, True, True, True, [], carried)


def test_texts_zh_and_en():
    assert review_text(Record("x"), PIN, "zh") == "待复核 · vLLM v0.1.0 (1111111aa1)"
    assert review_text(Record("x"), PIN, "en") == "Pending review · vLLM v0.1.0 (1111111aa1)"
    assert review_text(None, PIN, "zh") == "待复核 · vLLM v0.1.0 (1111111aa1)"
    assert review_text(reviewed(V1_SHA), PIN, "zh") == "已复核于 1111111aa1, 2026-12-01"
    assert review_text(reviewed(V1_SHA), PIN, "en") == "Reviewed at 1111111aa1, 2026-12-01"
    # a refresh set it back to pending: the last review stays visible
    pending = Record("x", "pending", V1_SHA, "2026-12-01T09:30:00Z")
    assert review_text(pending, PIN2, "zh") == "待复核（上次复核于 1111111aa1, 2026-12-01） · vLLM v0.2.0 (2222222bb2)"
    # carried to a new pin by refresh
    assert review_text(reviewed(V2_SHA, carried=V1_SHA), PIN2, "zh") == \
        "已复核于 1111111aa1, 2026-12-01 · 沿用至 vLLM v0.2.0 (2222222bb2)"
    # reviewed, but at another commit than the pin
    assert review_text(reviewed(V1_SHA), PIN2, "en") == \
        "Reviewed at 1111111aa1, 2026-12-01 · predates the pinned vLLM v0.2.0 (2222222bb2); to be re-reviewed"


@pytest.mark.parametrize("language, label, pending", [("zh_CN", "复核", "待复核 · vLLM v0.1.0 (1111111aa1)"),
                                                      ("en", "Review", "Pending review · vLLM v0.1.0 (1111111aa1)")])
def test_card_field_in_html(tmp_path, language, label, pending):
    from sphinx.testing.util import SphinxTestApp

    src = tmp_path / "sync-card"
    shutil.copytree(ROOTS / "sync-card", src)
    app = SphinxTestApp("html", srcdir=src, confoverrides={"language": language})
    try:
        app.build()
        html = (app.outdir / "01-part" / "01-pending.html").read_text()
        card = html[html.index('class="chapter-card'):]
        card = card[: card.index("</dl>")]
        assert re.search(rf'<dt class="card-review[^"]*">{label}<', card)
        assert pending in card
        done = (app.outdir / "01-part" / "02-reviewed.html").read_text()
        assert ("已复核于 1111111aa1, 2026-12-01" if language == "zh_CN" else "Reviewed at 1111111aa1, 2026-12-01") in done
        warnings = app.warning.getvalue()
        assert "01-part/03-norecord has no record in content-review.toml; run: python -m vllm_book.sync review sync" in warnings
        assert warnings.count("has no record") == 1
    finally:
        app.cleanup()
