"""``cli-transcript``: the book's own tools, run during the build, their output shown as a console session.

A transcript printed in a chapter is produced by running the command when the page is read, never pasted::

    ```{cli-transcript} vllm-doctor triage --fixture doctor/examples/preempt-cascade.json
    :exit: 1
    :max-lines: 40
    :caption: 用随书的 fixture 分诊一次抢占雪崩
    ```

Only the programs named in ``vllm_book_transcript_programs`` run (``{"vllm-doctor": "vllm_doctor"}``: the name
shown → the module run with ``python -m``, from the directories of ``vllm_book_transcript_pythonpath``), with the
repository root as working directory, ``SOURCE_DATE_EPOCH`` set to ``vllm_book_transcript_epoch`` (the tool's
"generated at" lines are the same on every build), ``TZ=UTC``, ``LC_ALL=C.UTF-8`` and a timeout.  A different exit
status than ``:exit:`` (default 0), a timeout or an unknown program is a warning at the directive's line (an error
under ``-W``), with the output's tail and the fix.  The page depends on the tool's sources and on every file the
command names, so editing a fixture or the tool re-runs it.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

TIMEOUT_S = 60


def _repo_root(directive: SphinxDirective) -> Path:
    from .config import repo_root

    return Path(repo_root(directive.config)).resolve()


class CliTranscript(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    has_content = False
    option_spec = {
        "exit": directives.nonnegative_int,
        "max-lines": directives.positive_int,
        "caption": directives.unchanged,
    }

    def run(self) -> list[nodes.Node]:
        command = self.arguments[0].strip()
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            return self._fail(f"cli-transcript: cannot split {command!r}: {exc}", "quote the arguments as a shell would")
        programs: dict[str, str] = dict(self.config.vllm_book_transcript_programs)
        if not argv or argv[0] not in programs:
            return self._fail(f"cli-transcript: {argv[0] if argv else '(empty)'!r} is not a program the build runs",
                              f"use one of {', '.join(sorted(programs)) or '(none configured)'}, or add it to "
                              "vllm_book_transcript_programs in conf.py")
        root = _repo_root(self)
        module = programs[argv[0]]
        self._note_dependencies(root, module, argv[1:])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_DOCTOR_", "PROMETHEUS"))}
        paths = [str(root / p) for p in self.config.vllm_book_transcript_pythonpath]
        env.update({"PYTHONPATH": os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])),
                    "SOURCE_DATE_EPOCH": str(int(self.config.vllm_book_transcript_epoch)), "TZ": "UTC",
                    "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8", "COLUMNS": "100", "NO_COLOR": "1"})
        try:
            proc = subprocess.run([sys.executable, "-m", module, *argv[1:]], cwd=root, env=env, capture_output=True,
                                  text=True, encoding="utf-8", errors="replace", timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return self._fail(f"cli-transcript: {command!r} did not finish in {TIMEOUT_S} s",
                              "show a command that finishes on the shipped fixtures")
        expected = self.options.get("exit", 0)
        output = proc.stdout.rstrip("\n")
        if proc.returncode != expected:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
            return self._fail(f"cli-transcript: {command!r} exited {proc.returncode}, the page says :exit: "
                              f"{expected}", f"fix the command or the fixture, or set :exit: {proc.returncode} "
                              "if that status is what the text explains", tail)
        lines = output.splitlines()
        limit = self.options.get("max-lines")
        if limit and len(lines) > limit:
            lines = lines[:limit] + [f"…（其余 {len(lines) - limit} 行略）"]
        text = "\n".join([f"$ {command}", *lines])
        block = nodes.literal_block(text, text, language="console", classes=["cli-transcript"])
        block["data-exit"] = str(proc.returncode)
        self.set_source_info(block)
        caption = self.options.get("caption")
        if not caption:
            return [block]
        container = nodes.container("", literal_block=True, classes=["literal-block-wrapper"])
        parsed, _msgs = self.state.inline_text(caption, self.lineno)
        cap = nodes.caption(caption, "", *parsed)
        self.set_source_info(cap)
        container += cap
        container += block
        return [container]

    def _note_dependencies(self, root: Path, module: str, args: list[str]) -> None:
        """The tool's whole directory (its code, data, playbooks and fixtures) and any file the command names."""
        for base in self.config.vllm_book_transcript_pythonpath:
            for f in sorted((root / base).rglob("*")):
                if f.is_file() and f.suffix in (".py", ".toml", ".json", ".md") and "__pycache__" not in f.parts:
                    self.env.note_dependency(str(f))
        for a in args:
            part = a.split("=", 1)[-1]
            if part and not part.startswith("-") and (root / part).is_file():
                self.env.note_dependency(str(root / part))

    def _fail(self, message: str, fix: str, output: list[str] | None = None) -> list[nodes.Node]:
        shown = "".join(f"\n      | {line}" for line in output or [])
        logger.warning(f"{message}\n    fix: {fix}" + (f"\n    its output ends:{shown}" if shown else ""),
                       type="vllm_book", subtype="transcript", location=(self.env.docname, self.lineno))
        return [nodes.literal_block("", f"$ {self.arguments[0]}\n（构建时未能运行，见构建日志）",
                                    classes=["cli-transcript", "failed"])]


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.add_directive("cli-transcript", CliTranscript)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
