"""The 复核 field of the chapter header card: review state and the pinned commit.

Connected to the ``vllm-book-card`` event that :mod:`vllm_book.chapters`
emits with ``(docname, card container)``; reads ``content-review.toml``
(``vllm_book_review_file``, relative to ``vllm_book_repo_root``) and the pin.

* ``待复核 · vLLM v0.26.0 (f2654939e6)`` — pending (with the last review, if any);
* ``已复核于 f2654939e6, 2026-12-01`` — reviewed at the pinned commit;
* ``… · 沿用至 vLLM v0.33.0 (4ba787ec91)`` — carried to a new pin by ``refresh``;
* a review at another commit than the pin is shown as stale.

English labels when ``language`` is ``en``.  A missing review file adds
nothing (test roots); a chapter without a record gets a warning (``make
validate`` reports it too).
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

from .. import pin as pin_mod
from . import review

logger = logging.getLogger(__name__)

LABELS = {
    "zh": {
        "field": "复核",
        "pending": "待复核",
        "last": "（上次复核于 {commit}, {date}）",
        "reviewed": "已复核于 {commit}, {date}",
        "carried": "沿用至 vLLM v{version} ({short})",
        "stale": "早于锁定的 vLLM v{version} ({short})，待重新复核",
        "pin": "vLLM v{version} ({short})",
    },
    "en": {
        "field": "Review",
        "pending": "Pending review",
        "last": " (last reviewed at {commit}, {date})",
        "reviewed": "Reviewed at {commit}, {date}",
        "carried": "carried to vLLM v{version} ({short})",
        "stale": "predates the pinned vLLM v{version} ({short}); to be re-reviewed",
        "pin": "vLLM v{version} ({short})",
    },
}

_CACHE: dict[tuple[str, float], review.Reviews] = {}


def _reviews(path: Path) -> review.Reviews | None:
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError:
        return None
    if key not in _CACHE:
        try:
            _CACHE[key] = review.load(path)[0]
        except (OSError, review.ReviewError):
            return None
    return _CACHE[key]


def review_text(rec: review.Record | None, pin: pin_mod.Pin | None, lang: str) -> str:
    lab = LABELS.get(lang, LABELS["en"])
    pin_text = lab["pin"].format(version=pin.version, short=pin.short) if pin else ""
    if rec is None or not rec.reviewed:
        text = lab["pending"]
        if rec is not None and rec.reviewed_commit and rec.reviewed_at:
            text += lab["last"].format(commit=rec.reviewed_commit[:10], date=rec.reviewed_at[:10])
        return f"{text} · {pin_text}" if pin_text else text
    human = rec.carried_from or rec.reviewed_commit
    text = lab["reviewed"].format(commit=human[:10], date=rec.reviewed_at[:10])
    if pin is not None and rec.reviewed_commit != pin.commit:
        return f"{text} · {lab['stale'].format(version=pin.version, short=pin.short)}"
    if rec.carried_from and pin is not None:
        return f"{text} · {lab['carried'].format(version=pin.version, short=pin.short)}"
    return text


def add_review_field(app: Sphinx, docname: str, card: nodes.Element) -> None:
    from ..chapters import add_card_field

    config = app.config
    root = Path(config.vllm_book_repo_root or app.srcdir)
    path = root / config.vllm_book_review_file
    reviews = _reviews(path)
    if reviews is None:
        return
    app.env.note_dependency(str(path))
    rec = reviews.get(docname)
    if rec is None:
        logger.warning("%s has no record in %s; run: python -m vllm_book.sync review sync", docname, path.name,
                       location=(docname, 1), type="vllm_book", subtype="review")
    try:
        pin = pin_mod.load_pin(root)
    except pin_mod.ProvisionError:
        pin = None
    lang = (config.language or "zh_CN").split("_")[0]
    para = nodes.paragraph("", review_text(rec, pin, lang))
    para["translatable"] = False
    add_card_field(card, LABELS.get(lang, LABELS["en"])["field"], para, "review")


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.setup_extension("vllm_book.chapters")  # registers the vllm-book-card event
    app.connect("vllm-book-card", add_review_field)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
