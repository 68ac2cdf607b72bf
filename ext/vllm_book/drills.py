"""Calculation drills whose answers are recomputed, not typed: the ``drill`` directive and its data file.

Each drill lives in ``vllm_book_drills`` (default ``source/_data/drills.toml``)::

    [[drill]]
    id = "kv-bytes-per-token"
    title = "每 token 的 KV 字节数"
    inputs = { layers = 32, kv_heads = 8, head_dim = 128, dtype_bytes = 2 }
    units = { layers = "层", kv_heads = "个", head_dim = "维", dtype_bytes = "B" }
    formula = "2 * layers * kv_heads * head_dim * dtype_bytes"
    answer = 131072
    unit = "B/token"
    rel_tol = 1e-9          # optional, default 1e-6
    source = "Meta-Llama-3-8B config.json"   # where the inputs come from (or "假设")

and ``` ```{drill} kv-bytes-per-token ``` ``` renders its inputs, formula and answer.  The formula is Python
arithmetic over the inputs (``+ - * / // % **``, parentheses, numbers and ``ceil floor log log2 sqrt min max``),
parsed with :mod:`ast` and evaluated on a whitelist, never with ``eval``.  :func:`check` recomputes every answer:
the build warns at the directive (an error under ``-W``), ``make validate``'s twin in ``tests/drills`` fails, so a
typo in an answer or an input cannot reach a reader.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import operator
import tomllib
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from .curriculum import record_lines

logger = logging.getLogger(__name__)

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_FUNCS = {"ceil": math.ceil, "floor": math.floor, "log": math.log, "log2": math.log2, "sqrt": math.sqrt,
          "min": min, "max": max}


class DrillError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Drill:
    id: str
    title: str
    inputs: dict[str, float]
    units: dict[str, str]
    formula: str
    answer: float
    unit: str
    rel_tol: float
    source: str
    line: int

    def compute(self) -> float:
        return evaluate(self.formula, self.inputs)

    def problem(self) -> str:
        """'' when the stated answer is the formula's value, else what is wrong."""
        try:
            value = self.compute()
        except DrillError as exc:
            return f"drill {self.id}: {exc}"
        if not math.isclose(value, self.answer, rel_tol=self.rel_tol, abs_tol=0.0 if self.answer else 1e-12):
            return (f"drill {self.id}: the answer says {self.answer:g} {self.unit} but {self.formula} = {value:.6g} "
                    f"with its inputs")
        return ""


def evaluate(formula: str, inputs: dict[str, float]) -> float:
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError as exc:
        raise DrillError(f"formula {formula!r} is not an expression ({exc.msg})") from None

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in inputs:
                raise DrillError(f"formula uses {node.id!r}, which is not an input ({', '.join(sorted(inputs))})")
            return inputs[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            try:
                return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
            except ZeroDivisionError:
                raise DrillError(f"formula {formula!r} divides by zero") from None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
            return _FUNCS[node.func.id](*(ev(a) for a in node.args))
        raise DrillError(f"formula {formula!r}: {ast.unparse(node)!r} is not allowed (arithmetic, numbers, inputs and "
                         f"{', '.join(sorted(_FUNCS))} only)")

    return float(ev(tree))


def load(path: Path) -> list[Drill]:
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DrillError(f"{path}: not valid TOML: {exc}") from None
    lines = record_lines(text, "[[drill]]")
    out, seen = [], set()
    for n, (d, line) in enumerate(zip(data.get("drill", []), lines)):
        where = f"{path}:{line}"
        missing = [k for k in ("id", "title", "inputs", "formula", "answer", "unit", "source") if k not in d]
        if missing:
            raise DrillError(f"{where}: drill #{n + 1} lacks {', '.join(missing)}")
        if d["id"] in seen:
            raise DrillError(f"{where}: drill id {d['id']!r} is used twice")
        seen.add(d["id"])
        bad = [k for k, v in d["inputs"].items() if isinstance(v, bool) or not isinstance(v, (int, float))]
        if bad:
            raise DrillError(f"{where}: inputs {', '.join(bad)} of {d['id']} are not numbers")
        out.append(Drill(d["id"], d["title"], dict(d["inputs"]), dict(d.get("units", {})), d["formula"],
                         float(d["answer"]), d["unit"], float(d.get("rel_tol", 1e-6)), d["source"], line))
    return out


def drills_path(config) -> Path:
    from .config import repo_root

    return Path(repo_root(config)) / config.vllm_book_drills


def _fmt(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:,.6g}"


class DrillDirective(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        path = drills_path(self.config)
        self.env.note_dependency(str(path))
        try:
            drills = {d.id: d for d in load(path)}
        except (OSError, DrillError) as exc:
            return self._warn(f"drill: {exc}", f"fix {path.name}")
        d = drills.get(self.arguments[0])
        if d is None:
            return self._warn(f"drill: no drill {self.arguments[0]!r} in {path.name}",
                              f"add a [[drill]] with id = \"{self.arguments[0]}\" or use one of "
                              f"{', '.join(sorted(drills))}")
        problem = d.problem()
        if problem:
            return self._warn(problem, f"correct the answer or the inputs in {path.name}:{d.line}")
        table = nodes.table(classes=["drill"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (30, 30, 40):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        head += self._row(["输入", "取值", "单位"], header=True)
        body = nodes.tbody()
        group += body
        for k, v in d.inputs.items():
            body += self._row([k, _fmt(v), d.units.get(k, "")], literal_first=True)
        out = nodes.container(classes=["drill-box"], ids=[f"drill-{d.id}"])
        title = nodes.paragraph()
        title += nodes.strong(text=f"演算：{d.title}")
        title += nodes.Text(f"（数据来源：{d.source}）")
        out += title
        out += table
        formula = nodes.paragraph()
        formula += nodes.Text("公式：")
        formula += nodes.literal(text=d.formula)
        formula += nodes.Text(" = ")
        formula += nodes.strong(text=f"{_fmt(d.answer)} {d.unit}")
        out += formula
        self.set_source_info(out)
        return [out]

    def _row(self, cells: list[str], header: bool = False, literal_first: bool = False) -> nodes.row:
        row = nodes.row()
        for i, c in enumerate(cells):
            entry = nodes.entry()
            para = nodes.paragraph()
            para += nodes.literal(text=c) if (literal_first and i == 0) else nodes.Text(c)
            entry += para
            row += entry
        return row

    def _warn(self, message: str, fix: str) -> list[nodes.Node]:
        logger.warning(f"{message}\n    fix: {fix}", type="vllm_book", subtype="drill",
                       location=(self.env.docname, self.lineno))
        return []


def setup(app: Sphinx) -> dict[str, object]:
    app.setup_extension("vllm_book.config")
    app.add_directive("drill", DrillDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
