"""The real book: ``make validate`` passes, and the scanner agrees with the anchors engineer's ``find_anchors``."""

from __future__ import annotations

import pytest
from sync_helpers import REPO
from vllm_book import pin as pin_mod
from vllm_book.anchors.lint import find_anchors
from vllm_book.sync import mdscan, validate


def test_scanner_finds_exactly_the_anchors_find_anchors_finds():
    source = REPO / "source"
    for md in sorted(source.rglob("*.md")):
        ours = [(a.line, a.target) for a in mdscan.scan(md, source).anchors]
        assert sorted(ours) == find_anchors(md.read_text(encoding="utf-8")), md


def test_content_review_has_one_pending_or_reviewed_record_per_chapter():
    from vllm_book import curriculum
    from vllm_book.sync import review

    cur = curriculum.load(REPO / "curriculum.toml")
    reviews, problems = review.load(REPO / "content-review.toml")
    assert problems == []
    assert [r.path for r in reviews.records] == [c.path for c in cur.chapters()]
    assert review.check_against(reviews, cur.chapters(), pin_mod.load_pin(REPO).commit, full=False,
                                curriculum_name="curriculum.toml") == []


@pytest.mark.integration
def test_make_validate_passes_on_the_book():
    try:
        pin_mod.tree_provenance(REPO)
    except pin_mod.ProvisionError as exc:
        pytest.skip(f"vllm/ not provisioned: {exc}")
    result = validate.run(REPO, "contracts")
    assert result.problems == [], validate.report(result)
