"""The Markdown scanner: anchors, references, labels, diagrams and raw source lines, with .md lines."""

from __future__ import annotations

from pathlib import Path

from vllm_book.sync import mdscan


def scan(tmp_path: Path, text: str, chapter: bool = False) -> mdscan.Page:
    (tmp_path / "p").mkdir(exist_ok=True)
    md = tmp_path / "p" / "page.md"
    md.write_text(text, encoding="utf-8")
    return mdscan.scan(md, tmp_path, chapter=chapter)


def test_roles_directives_and_their_lines(tmp_path):
    page = scan(tmp_path, """\
# Title

See {src}`vllm/a.py::A.f` and {src}`the loop <vllm/a.py::A.f:"for x in">`, not ``{src}`vllm/not.py` ``.

```{src-code} vllm/a.py::A
:max-lines: 5
```

````{note}
Inside a note: {src}`vllm/b.py`.

```python
{src}`vllm/in_code.py` is code, not an anchor
```
````
""")
    assert [(a.line, a.form, a.target) for a in page.anchors] == [
        (3, "role", "vllm/a.py::A.f"),
        (3, "role", 'vllm/a.py::A.f:"for x in"'),
        (5, "directive", "vllm/a.py::A"),
        (10, "role", "vllm/b.py"),
    ]
    assert page.h1 == ("Title", 1)


def test_references_labels_and_h1_skip_fences(tmp_path):
    page = scan(tmp_path, """\
---
prerequisites: [01-x/01-y]
---

```text
# not a heading
```

(my-label)=

# Real title

{doc}`../other`, {ref}`text <my-label>`, {numref}`fig-a`, [rel](sub/x.md#frag), ![img](a.png), [lbl](#my-label), [web](https://example.org)

```{figure} a.png
:name: fig-a
```
""")
    assert page.h1 == ("Real title", 11)
    assert page.front_matter == {"prerequisites": ["01-x/01-y"]}
    assert {(r.kind, r.target) for r in page.references} == {
        ("doc", "../other"), ("ref", "my-label"), ("numref", "fig-a"), ("link", "sub/x.md#frag"),
        ("image", "a.png"), ("label-link", "my-label"),
    }
    assert page.labels == {"my-label": 9, "fig-a": 16}


def test_unmanaged_lines_and_every_opt_out(tmp_path):
    page = scan(tmp_path, """\
# T

prose a.py:1 and `b.py:2` and `c.py:3`{.no-src-check} and [x d.py:4]{.no-src-check}.

{.no-src-check}
para e.py:5
still opted f.py:6

next g.py:7

```{code-block} console
:class: no-src-check
h.py:8
```

:::{container} no-src-check
i.py:9
:::

```console
j.py:10
```

```{mermaid}
flowchart LR
  A["k.py:11"] --> B
```

<!-- l.py:12 -->
% m.py:13
{src}`vllm/x.py::f` n.cu:14 and [GitHub](https://github.com/vllm-project/vllm/blob/main/vllm/x.py#L15)
""")
    assert [(u.line, u.text) for u in page.unmanaged] == [
        (3, "a.py:1"), (3, "b.py:2"), (9, "g.py:7"), (21, "j.py:10"), (31, "n.cu:14"),
        (31, "https://github.com/vllm-project/vllm/blob/main/vllm/x.py#L15"),
    ]


def test_div_opt_out_and_parity_with_find_anchors(tmp_path):
    from vllm_book.anchors.lint import find_anchors

    text = ":::{div} no-src-check\nx.py:1\n:::\n\nSee {src}`vllm/a.py::f` and\n\n```{src-code} vllm/b.py\n```\n"
    page = scan(tmp_path, text)
    assert page.unmanaged == []
    assert [(a.line, a.target) for a in page.anchors] == find_anchors(text) == [(5, "vllm/a.py::f"), (7, "vllm/b.py")]


def test_front_matter_is_checked_only_on_chapters(tmp_path):
    text = "---\naudience: reads x.py:3\n---\n\n# T\n"
    assert [(u.line, u.text) for u in scan(tmp_path, text, chapter=True).unmanaged] == [(2, "x.py:3")]
    assert scan(tmp_path, text).unmanaged == []


def test_mermaid_diagrams_and_fence_problems(tmp_path):
    page = scan(tmp_path, """\
# T

```{mermaid}
:caption: flow
flowchart LR
  A --> B
```

```mermaid
flowchart LR
```

````{note}
never closed
""")
    assert [(d.line, d.first, d.text) for d in page.diagrams] == [(3, 5, "flowchart LR\n  A --> B")]
    assert (9, "a ```mermaid fence renders as a code block, not a diagram", "write the fence as ```{mermaid}") in page.problems
    assert any(line == 13 and "never closed" in msg for line, msg, _fix in page.problems)
