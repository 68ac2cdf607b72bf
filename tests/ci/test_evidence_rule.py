"""The "GPU 已验证" rule of ``make validate`` (``vllm_book.sync.evidence``), on records written by the real
``scripts/gpu-validation.sh`` (with the fakes): a badge needs a review record listing a run whose evidence exists,
validates against ``schemas/gpu-evidence.schema.json``, is unchanged and passed; every problem is file:line + fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from ci_helpers import REPO, gpu_env, run_gpu
from vllm_book import pin as pin_mod
from vllm_book.sync import evidence, review, validate

PIN = pin_mod.load_pin(REPO)
CHAPTER = "01-part/01-a"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Two evidence records made by the GPU script with the fakes: one passed, one failed."""
    from ci_helpers import commit_all, git

    base = tmp_path_factory.mktemp("runs")
    repo = base / "book"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "vllm-pin.toml", repo / "vllm-pin.toml")
    shutil.copy(REPO / "scripts" / "gpu-validation.commands", repo / "scripts" / "gpu-validation.commands")
    git(repo, "init", "-q")
    commit_all(repo)
    out = base / "out"
    assert run_gpu(repo, out, gpu_env(base), "--id", "gpu-ok").returncode == 0
    assert run_gpu(repo, out, gpu_env(base, FAKE_VLLM_FAIL_BENCH="1"), "--id", "gpu-failed").returncode == 1
    return out


def make_root(tmp_path: Path, recorded: Path, runs: list[str], badge: bool = True, records: tuple[str, ...] = ("gpu-ok",)) -> Path:
    root = tmp_path / "root"
    (root / "source" / "01-part").mkdir(parents=True)
    text = "# A\n\n本章的吞吐数字来自一次 GPU 运行。\n\n" + ("**GPU 已验证**（H100，见复核记录）\n" if badge else "")
    (root / "source" / f"{CHAPTER}.md").write_text(text, encoding="utf-8")
    (root / "source" / "index.md").write_text("# Book\n", encoding="utf-8")
    rec = review.Record(path=CHAPTER, hardware_runs=runs)
    (root / "content-review.toml").write_text(review.dumps([rec]), encoding="utf-8")
    for r in records:
        shutil.copytree(recorded / r, root / "evidence" / r)
    return root


def fmt(problems) -> list[str]:
    return [p.format() for p in problems]


def rec_line(root: Path) -> int:
    return review.load(root / "content-review.toml")[0].records[0].line


def test_a_badge_backed_by_a_passed_run_is_accepted(tmp_path, recorded):
    root = make_root(tmp_path, recorded, ["gpu-ok"])
    assert fmt(evidence.check(root, PIN.commit, full=True)) == []


def test_a_badge_without_a_run_fails_at_its_line(tmp_path, recorded):
    root = make_root(tmp_path, recorded, [])
    assert fmt(evidence.check(root, PIN.commit)) == [
        f'source/{CHAPTER}.md:5: "GPU 已验证" but content-review.toml lists no hardware run for {CHAPTER}\n'
        f"    fix: record a GPU run (scripts/gpu-validation.sh, then: python -m vllm_book.sync review mark {CHAPTER} "
        "--hardware-run <id> …), or remove the badge"]
    # a page with no review record (a part page) cannot carry it at all
    (root / "source" / "index.md").write_text("# Book\n\nGPU 已验证\n", encoding="utf-8")
    assert 'source/index.md:3: "GPU 已验证" on a page without a review record' in "\n".join(fmt(evidence.check(root, PIN.commit)))


def test_a_run_id_without_evidence_fails_at_the_review_record(tmp_path, recorded):
    root = make_root(tmp_path, recorded, ["gpu-ok", "h100-never-recorded"])
    (msg,) = fmt(evidence.check(root, PIN.commit))
    assert msg.startswith(f"content-review.toml:{rec_line(root)}: {CHAPTER}: hardware run 'h100-never-recorded' has no "
                          "evidence record (evidence/h100-never-recorded/result.json)\n    fix: run scripts/gpu-validation.sh")


def test_a_failed_run_does_not_back_a_badge(tmp_path, recorded):
    root = make_root(tmp_path, recorded, ["gpu-failed"], records=("gpu-failed",))
    (msg,) = fmt(evidence.check(root, PIN.commit))
    assert f"{CHAPTER}: hardware run 'gpu-failed' did not pass (2 of 4 commands failed" in msg


def test_schema_violations_are_reported_at_the_key(tmp_path, recorded):
    root = make_root(tmp_path, recorded, ["gpu-ok"])
    res = root / "evidence" / "gpu-ok" / "result.json"
    data = json.loads(res.read_text())
    data["status"] = "looks fine"
    del data["gpu"]["cuda_version"]
    res.write_text(json.dumps(data, indent=2))
    text = res.read_text().splitlines()
    status_line = next(i for i, line in enumerate(text, 1) if '"status"' in line)
    msgs = fmt(evidence.check(root, PIN.commit))
    assert (f"evidence/gpu-ok/result.json:{status_line}: does not follow schemas/gpu-evidence.schema.json at status: "
            "'looks fine' is not one of ['passed', 'failed']\n    fix: records are written by scripts/gpu-validation.sh; "
            "re-run it rather than editing the file") in msgs
    assert any("at gpu: 'cuda_version' is a required property" in m for m in msgs)
    assert any(m.startswith(f"content-review.toml:{rec_line(root)}: {CHAPTER}: hardware run 'gpu-ok': its evidence "
                            "record is invalid") for m in msgs)


def test_an_edited_log_and_a_committed_token_are_caught(tmp_path, recorded):
    root = make_root(tmp_path, recorded, ["gpu-ok"])
    log = next((root / "evidence" / "gpu-ok" / "logs").glob("*bench-latency.log"))
    log.write_text(log.read_text() + "Avg latency: 0.0001 seconds\nHF_TOKEN=hf_SneakedInByHand123456\n")
    msgs = "\n".join(fmt(evidence.check(root, PIN.commit)))
    assert f"logs/{log.name} does not match its recorded sha256 (edited after the run?)" in msgs
    assert f"evidence/gpu-ok/logs/{log.name}:3: holds a string shaped like a secret token (hf_S…)" in msgs
    assert "fix: delete the record, revoke the token" in msgs


def test_profile_full_requires_the_run_at_the_pinned_commit(tmp_path, recorded):
    root = make_root(tmp_path, recorded, ["gpu-ok"])
    other = "0" * 40
    assert evidence.check(root, other) == []  # contracts: a run of the previous pin still backs the badge
    (msg,) = fmt(evidence.check(root, other, full=True))
    assert (f"profile full: {CHAPTER}: hardware run 'gpu-ok' was recorded at vLLM {PIN.commit[:10]}, not at the pinned "
            "0000000000") in msg


def test_validate_runs_the_rule(tmp_path, recorded):
    """make validate's run() reports the rule's problems (the one-line hook in validate.py)."""
    root = make_root(tmp_path, recorded, [])
    shutil.copy(REPO / "vllm-pin.toml", root / "vllm-pin.toml")
    result = validate.run(root, "contracts", diagrams=False)
    ev = [p for p in result.problems if p.check == "evidence"]
    assert [(p.file, p.line) for p in ev] == [(f"source/{CHAPTER}.md", 5)]
    # and the real book: no badge, no record, nothing to report
    assert evidence.check(REPO, PIN.commit, full=True) == []
