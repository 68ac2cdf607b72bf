"""The catalog gate (vllm_book.sync.catalogs): each seeded error in a .po file is caught at its line, with a fix;
a clean catalog passes; the book's own catalogs pass."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from vllm_book.intl import markup, po, spelling
from vllm_book.sync import catalogs

REPO = Path(__file__).resolve().parents[2]

HEADER = textwrap.dedent('''\
    msgid ""
    msgstr ""
    "Content-Type: text/plain; charset=utf-8\\n"
    "Language: en\\n"

    ''')

GOOD = HEADER + textwrap.dedent('''\
    #: ../../source/ch.md:3
    msgid "调度器在 {src}`vllm/v1/core/sched/scheduler.py::Scheduler.schedule` 里，按 `max_num_seqs` 限制。"
    msgstr ""
    "The scheduler lives in {src}`vllm/v1/core/sched/scheduler.py::Scheduler.schedule` and is bounded by "
    "`max_num_seqs`."

    #: ../../source/ch.md:5
    msgid "见 {src}`这一行 <vllm/config/cache.py::CacheConfig:\\"block_size\\">` 与 {ref}`core-prefix` 及 $2 \\\\times L$。"
    msgstr "See {src}`this line <vllm/config/cache.py::CacheConfig:\\"block_size\\">`, {ref}`the prefix chapter <core-prefix>` and $2 \\\\times L$."

    #: ../../source/ch.md:7
    msgid "章末是 `小结`。"
    msgstr "Every chapter ends with `Summary`."

    #: ../../source/ch.md:9
    msgid "尚未翻译的段落。"
    msgstr ""
    ''')


def write(root: Path, text: str, name: str = "ch.po") -> Path:
    path = root / "locale" / "en" / "LC_MESSAGES" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(root: Path):
    problems, fig = catalogs.check(root)
    return problems, fig


def test_clean_catalog_passes(tmp_path: Path):
    write(tmp_path, GOOD)
    problems, fig = run(tmp_path)
    assert problems == []
    assert (fig.catalogs, fig.messages, fig.translated, fig.fuzzy) == (1, 4, 3, 0)


def only(problems, line: int):
    assert len(problems) == 1, [p.format() for p in problems]
    p = problems[0]
    assert p.file == "locale/en/LC_MESSAGES/ch.po" and p.line == line and p.fix and p.check == "catalogs"
    return p


def test_altered_anchor(tmp_path: Path):
    write(tmp_path, GOOD.replace("and is bounded by", "and is bounded by").replace(
        '"The scheduler lives in {src}`vllm/v1/core/sched/scheduler.py::Scheduler.schedule`',
        '"The scheduler lives in {src}`vllm/v1/core/sched/scheduler.py::Scheduler.update_from_output`'))
    p = only(run(tmp_path)[0], 8)
    assert "Scheduler.schedule" in p.message and "is changed" in p.message and "update_from_output" in p.message


def test_altered_ref_target_with_translated_text(tmp_path: Path):
    write(tmp_path, GOOD.replace("{ref}`the prefix chapter <core-prefix>`", "{ref}`the prefix chapter <core-prefx>`"))
    p = only(run(tmp_path)[0], 14)
    assert "{ref}core-prefix" in p.message


def test_dropped_inline_code(tmp_path: Path):
    write(tmp_path, GOOD.replace('"`max_num_seqs`."', '"max_num_seqs."'))
    p = only(run(tmp_path)[0], 8)
    assert "inline code 'max_num_seqs' is missing" in p.message


def test_dropped_math(tmp_path: Path):
    write(tmp_path, GOOD.replace(" and $2 \\\\times L$.", "."))
    p = only(run(tmp_path)[0], 14)
    assert "math" in p.message


def test_fuzzy_entry(tmp_path: Path):
    write(tmp_path, GOOD.replace("#: ../../source/ch.md:7\n", "#: ../../source/ch.md:7\n#, fuzzy\n"))
    p = only(run(tmp_path)[0], 18)
    assert "fuzzy" in p.message and "delete 'fuzzy'" in p.fix


def test_misspelt_word(tmp_path: Path):
    write(tmp_path, GOOD.replace("The scheduler lives", "The sheduler lives"))
    p = only(run(tmp_path)[0], 8)
    assert "sheduler" in p.message and "wordlist.txt" in p.fix


def test_word_list_accepts_terms(tmp_path: Path):
    text = GOOD.replace("The scheduler lives", "The prefill scheduler lives")
    write(tmp_path, text)
    assert "prefill" in run(tmp_path)[0][0].message
    (tmp_path / "locale" / "en" / "wordlist.txt").write_text("# terms\nprefill\n")
    assert run(tmp_path)[0] == []


@pytest.mark.parametrize("bad, line, words", [
    ('msgstr "unterminated\n', 18, "quoted string"),
    ('msgstr "a "quote" inside"\n', 18, "unescaped double quote"),
    ('msgstr "bad \\q escape"\n', 18, "unknown escape"),
    ('this is not gettext\n', 18, "not a gettext line"),
])
def test_broken_line(tmp_path: Path, bad: str, line: int, words: str):
    text = GOOD.replace('msgstr "Every chapter ends with `Summary`."\n', bad)
    write(tmp_path, text)
    p = only(run(tmp_path)[0], line)
    assert words in p.message and p.fix


def test_msgid_without_msgstr(tmp_path: Path):
    write(tmp_path, GOOD.replace('msgstr "Every chapter ends with `Summary`."\n', ""))
    p = only(run(tmp_path)[0], 17)
    assert "without a msgstr" in p.message


def test_reader_agrees_with_babel():
    """Our reader and babel (what Sphinx compiles .mo with) see the same entries in the book's catalogs."""
    from babel.messages.pofile import read_po

    files = sorted((REPO / "locale").rglob("*.po"))
    assert files
    for f in files:
        ours = po.read(f)
        with f.open("rb") as fh:
            theirs = read_po(fh)
        assert {e.msgid: e.msgstr for e in ours.messages()} == {m.id: m.string for m in theirs if m.id}, f
        assert {e.msgid for e in ours.messages() if e.fuzzy} == {m.id for m in theirs if m.id and m.fuzzy}, f


def test_markup_tokens():
    t = markup.tokens("看 {src}`这行 <a.py::F:\"x\">`、{doc}`../x`、`code`、$a+b$、{{ vllm_version }}、[t](https://e.org)")
    assert t == {("role", '{src}a.py::F:"x"'): 1, ("role", "{doc}../x"): 1, ("code", "code"): 1,
                 ("math", "a+b"): 1, ("subst", "vllm_version"): 1, ("link", "https://e.org"): 1}


def test_spelling_skips_identifiers():
    assert spelling.words("The vLLM PagedAttention KV TTFT H100 kv_cache a.b doesn't work") == ["The", "does", "work"]


def test_book_catalogs_pass():
    problems, fig = catalogs.check(REPO)
    assert problems == [], "\n".join(p.format() for p in problems)
    assert fig.translated > 0


def _diagram_po(msgstr: str) -> str:
    def q(text: str) -> str:
        return '"' + text.replace('"', '\\"').replace("\n", "\\n") + '"'
    msgid = 'flowchart LR\n    A["等待"] --> B["运行"]'
    return HEADER + f"#: ../../source/ch.md:3\nmsgid {q(msgid)}\nmsgstr {q(msgstr)}\n"


@pytest.mark.skipif(not (REPO / "node_modules" / "mermaid").is_dir(), reason="needs the pinned Mermaid (npm ci)")
def test_translated_diagram_must_parse(tmp_path: Path):
    (tmp_path / "node_modules").symlink_to(REPO / "node_modules", target_is_directory=True)
    write(tmp_path, _diagram_po('flowchart LR\n    A["waiting"] --> B["running"]'))
    assert run(tmp_path)[0] == []
    write(tmp_path, _diagram_po('flowchart LR\n    A["waiting --> B["running"]'))  # a quote lost
    p = only(run(tmp_path)[0], 8)
    assert "translated Mermaid diagram" in p.message and "does not parse" in p.message


def test_diagram_messages_are_recognised():
    assert catalogs.is_diagram_message("flowchart LR\n  A --> B")
    assert catalogs.is_diagram_message("%%{init: {}}%%\nsequenceDiagram\n  A->>B: x")
    assert not catalogs.is_diagram_message("调度器的流程")


def test_final_line_break_must_match(tmp_path: Path):
    text = HEADER + '#: ../../source/ch.md:3\nmsgid "步 1\\n步 2\\n"\nmsgstr "step 1\\nstep 2"\n'
    write(tmp_path, text)
    p = only(run(tmp_path)[0], 8)
    assert "line break" in p.message
