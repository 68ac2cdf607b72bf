"""Mermaid syntax check: every diagram parsed by the pinned mermaid, in one node process.

``node_modules/mermaid`` (installed by ``make mermaid-js``) is the same
Mermaid the HTML edition ships, so a diagram that passes here parses in the
reader's browser.  ``mermaid_check.mjs`` stubs DOMPurify's hooks, which is
all ``mermaid.parse()`` needs from a DOM.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).with_name("mermaid_check.mjs")
INSTALL_HINT = "install Node.js (apt-get install nodejs npm) and the pinned Mermaid: make mermaid-js"


class MermaidUnavailable(RuntimeError):
    pass


def _summary(message: str) -> str:
    """The parser's message without the context excerpt (we point at the line)."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    if not lines:
        return "parse error"
    head = lines[0]
    tail = lines[-1] if len(lines) > 1 and not re.fullmatch(r"-*\^", lines[-1]) else ""
    if re.match(r"Parse error on line \d+:$", head) and tail:
        out = tail  # the excerpt lines are dropped: the report points at the .md line
    else:
        out = " ".join(lines)
    # line numbers inside the diagram would contradict the .md line we report
    out = re.sub(r"(Parse|Lexer) error on line \d+, column (\d+)", r"\1 error at column \2", out)
    return out if len(out) <= 300 else out[:297] + "…"


def node_binary() -> str | None:
    return shutil.which("node")


def parse_many(diagrams: list[str], node_modules: Path, *, timeout: float = 120) -> tuple[str, list[tuple[bool, int, str]]]:
    """Parse *diagrams*; returns (mermaid version, [(ok, line within the diagram, message)])."""
    node = node_binary()
    if node is None:
        raise MermaidUnavailable(f"node is not installed, so {len(diagrams)} Mermaid diagram(s) cannot be checked")
    if not (node_modules / "mermaid" / "package.json").is_file():
        raise MermaidUnavailable(f"{node_modules}/mermaid is missing, so {len(diagrams)} Mermaid diagram(s) cannot be checked")
    proc = subprocess.run([node, str(SCRIPT), str(node_modules)], input=json.dumps({"diagrams": diagrams}),
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise MermaidUnavailable(f"the Mermaid checker failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}")
    data = json.loads(proc.stdout)
    out = []
    for text, r in zip(diagrams, data["results"], strict=True):
        if r["ok"]:
            out.append((True, 0, ""))
        else:
            n_lines = text.count("\n") + 1
            line = min(max(int(r.get("line") or 1), 1), n_lines)
            out.append((False, line, _summary(r["message"])))
    return data["version"], out
