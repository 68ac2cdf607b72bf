"""Machine-checked commands: the book's ``vllm …`` command lines, ``VLLM_*`` variables and ``vllm:*`` metrics.

Part of ``make validate`` (:func:`check_pages`).  Three checks, each with the pinned release as the truth:

commands
    every ``vllm …`` and ``python -m vllm.…`` command line in a shell block (```` ```console ````, ``bash``,
    ``shell``, ``sh``, ``zsh``, ``{code-block} console``…), every inline code span that is such a command
    (`` `vllm serve --headless` ``) or a run of options (`` `--max-num-seqs 256` ``; it passes when some
    ``vllm`` subcommand takes it; a single-dash word of more than three letters, like ``-name``, is not taken
    for an option) and every bare ``--option`` in prose is parsed with
    argparse's rules against ``ext/vllm_book/data/vllm-cli-<version>.json``, the pinned release's own parsers
    dumped by ``tools/dump_vllm_cli.py`` (``make cli-spec``).  What is checked: subcommands (``vllm bench
    <type>``), option names (exact, or a unique prefix where the parser allows abbreviations — vLLM's
    ``FlexibleArgumentParser`` keeps argparse's default ``allow_abbrev=True``), ``--foo=bar``, the
    underscore spelling (``--max_num_seqs``) and ``-O3``/``-O=3`` that ``FlexibleArgumentParser.parse_args``
    rewrites, ``--no-foo`` of boolean pairs, values given to flags (``--enforce-eager=1``) and missing
    values, choices, extra positional arguments, JSON-valued config arguments (the value parses as JSON,
    its top-level keys are fields of the config dataclass; ``--attention-config.flash_attn_version=2``
    dotted keys likewise).  Shell syntax handled: ``$ `` prompts (``console``: only prompt lines and their
    continuations are commands; the rest is output; here-document bodies are data), ``\\`` continuations,
    quotes, comments, ``|``,
    ``&&``, ``;``, ``VLLM_X=1 vllm …`` prefixes and ``env``/``sudo``/``nohup``/``time``; placeholders
    (``<model>``, ``$MODEL``, ``${X:-y}``, ``[options]``, ``...``) are accepted as values and positionals.
variables
    every ``VLLM_*`` name in the book's text, inline code and code blocks (not in ``{src}`` roles, which the
    anchors check resolves) must be an environment variable of the tree: a key of ``environment_variables``
    in ``vllm/envs.py`` (static parse, no import), or a name the tree reads from the environment elsewhere
    (``os.environ…("VLLM_X")``, ``os.getenv``, ``"VLLM_X" in os.environ``, CMake ``$ENV{VLLM_X}``, in
    ``vllm/``, ``setup.py``, ``CMakeLists.txt``, ``cmake/``, ``csrc/``).  A name used as a variable
    (``VLLM_X=1``, ``$VLLM_X``, ``export VLLM_X``, ``envs.VLLM_X``, ``os.environ["VLLM_X"]``) must be one of
    those; a bare mention may also be another identifier of the code (``CompilationMode.VLLM_COMPILE``, a
    CMake variable, a C macro).  ``VLLM_FOO_*`` is a family: some variable must start with ``VLLM_FOO_``.
metrics
    every ``vllm:*`` name must be a metric of the tree: a string literal ``"vllm:name"`` in ``vllm/``
    (its type — counter, gauge, histogram — read from the ``…counter…(name=…)`` call that declares it).
    The Prometheus exposition suffixes are accepted where the type has them: ``_total``/``_created`` for
    counters (a counter declared with ``_total`` is exposed as such), ``_bucket``/``_sum``/``_count``/
    ``_created`` for histograms, any of them when the type is unknown.  ``vllm:prefix_cache_*`` is a family.

An error names the file and line, the bad name and the closest real one (:mod:`difflib`).  Opt-outs, for an
example that is wrong on purpose: the class ``no-cmd-check`` (``:class: no-cmd-check`` on a
``{code-block}`` or an admonition (title and body), a ``{.no-cmd-check}`` line before a fence or a paragraph, `` `VLLM_USE_V1`{.no-cmd-check} ``
inline), or a shell comment ``# vllm-book: no-check`` on a command (skips that command only).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import functools
import json
import os
import re
from pathlib import Path

from . import mdscan
from .common import Problem, rel

NO_CHECK_CLASS = "no-cmd-check"
NO_CHECK_COMMENT = re.compile(r"#\s*vllm-book:\s*no-check\b")
SHELL_LANGS = frozenset({"console", "bash", "shell", "sh", "zsh", "shell-session", "shellsession", "sh-session",
                         "ksh", "fish", "terminal"})
PROMPT_LANGS = frozenset({"console", "shell-session", "shellsession", "sh-session", "terminal"})
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_sum", "_count", "_created"),
            "gauge": (), "summary": ("_sum", "_count", "_created"), "info": ("_info",), None: ("_total", "_created",
            "_bucket", "_sum", "_count", "_info")}
#: wrappers a command may start with (their own options are not checked)
WRAPPERS = frozenset({"env", "sudo", "nohup", "time", "exec", "command", "nice", "stdbuf", "taskset", "numactl",
                      "timeout", "uv", "uvx", "poetry", "pipx", "conda", "docker"})


def spec_path(version: str) -> Path:
    return DATA_DIR / f"vllm-cli-{version}.json"


# ---------------------------------------------------------------------------- the parser spec


@dataclasses.dataclass
class Option:
    strings: tuple[str, ...]
    dest: str
    takes_value: bool
    nargs: object
    choices: tuple | None
    json_fields: tuple[str, ...] | None
    json_value: bool
    action: str
    value_type: str = ""  # int | float | human_readable_int | human_readable_int_or_auto | loads
    none_ok: bool = False


@dataclasses.dataclass
class Parser:
    prog: str
    allow_abbrev: bool
    flexible: bool
    options: dict[str, Option]
    positionals: list[dict]
    subcommands: dict[str, Parser]  # names and aliases
    sub_required: bool = False

    @functools.cached_property
    def option_names(self) -> list[str]:
        return sorted(self.options)


def _parser(d: dict) -> Parser:
    opts: dict[str, Option] = {}
    for o in d["options"]:
        opt = Option(tuple(o["option_strings"]), o["dest"], bool(o["takes_value"]), o.get("nargs"),
                     tuple(o["choices"]) if o.get("choices") is not None else None,
                     tuple(o["json_fields"]) if o.get("json_fields") else None, bool(o.get("json_value")),
                     o.get("action", ""), o.get("value_type", ""), bool(o.get("none_ok")))
        for s in opt.strings:
            opts[s] = opt
    subs: dict[str, Parser] = {}
    for name, sd in (d.get("subcommands") or {}).items():
        sp = _parser(sd)
        subs[name] = sp
        for alias in sd.get("aliases") or ():
            subs[alias] = sp
    positionals = [p for p in d["positionals"] if not p.get("subcommand")]
    sub_required = any(p.get("subcommand") and p.get("required") for p in d["positionals"])
    return Parser(d["prog"], bool(d.get("allow_abbrev", True)), bool(d.get("flexible")), opts, positionals, subs,
                  sub_required)


@dataclasses.dataclass
class Spec:
    version: str
    path: Path
    programs: dict[str, Parser]  # "vllm", "python -m vllm.entrypoints.openai.api_server", …

    def flat(self) -> list[Parser]:
        """Every parser with options, the ``vllm serve`` parser first (for option-only inline spans)."""
        out: list[Parser] = []
        seen: set[int] = set()

        def walk(p: Parser) -> None:
            if id(p) in seen:
                return
            seen.add(id(p))
            if p.options:
                out.append(p)
            for sp in p.subcommands.values():
                walk(sp)

        for p in self.programs.values():
            walk(p)
        out.sort(key=lambda p: (p.prog != "vllm serve", not p.prog.startswith("vllm bench"), p.prog))
        return out


@functools.lru_cache(maxsize=4)
def load_spec(path: Path) -> Spec:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return Spec(str(data["vllm_version"]), Path(path), {k: _parser(v) for k, v in data["programs"].items()})


# ---------------------------------------------------------------------------- what the tree knows

_ENV_READ = re.compile(
    r"""(?:environ(?:\.get|\.setdefault|\.pop)?\s*[\[(]\s*|getenv\s*\(\s*|setenv\s*\(\s*|delenv\s*\(\s*)["'](VLLM_[A-Z0-9_]+)["']"""
    r"""|["'](VLLM_[A-Z0-9_]+)["']\s+(?:not\s+)?in\s+(?:os\.)?environ"""
    r"""|\$ENV\{(VLLM_[A-Z0-9_]+)\}""")
_IDENT = re.compile(r"(?<![A-Za-z0-9_])VLLM_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
_METRIC_LIT = re.compile(r"""["'](vllm:[a-z_][a-z0-9_]*)["']""")
_METRIC_DECL = re.compile(r"(?i)(counter|gauge|histogram|summary|info)\w*\s*\(\s*(?:name\s*=\s*)?$")
_CODE_SUFFIXES = frozenset({".py", ".cu", ".cuh", ".h", ".hpp", ".cpp", ".cc", ".c", ".cmake", ".txt", ".sh"})


@dataclasses.dataclass
class TreeFacts:
    env_vars: dict[str, str]  # name → "vllm/envs.py" or the first other file that reads it
    identifiers: frozenset[str]  # every VLLM_* token of the code (env vars included)
    metrics: dict[str, str | None]  # "vllm:name" → counter | gauge | histogram | … | None (type unknown)
    has_envs: bool = True  # vllm/envs.py was found (else only the names read elsewhere are known)

    @functools.cached_property
    def exposed(self) -> dict[str, str]:
        """Every name a Prometheus scrape can show → the declared metric it comes from."""
        out: dict[str, str] = {}
        for name, kind in self.metrics.items():
            out.setdefault(name, name)
            base = name.removesuffix("_total") if kind == "counter" else name
            for suf in SUFFIXES.get(kind, SUFFIXES[None]):
                out.setdefault(base + suf, name)
        return out


def _envs_keys(envs_py: Path) -> set[str]:
    mod = ast.parse(envs_py.read_text(encoding="utf-8"))
    for node in mod.body:
        target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id == "environment_variables" and isinstance(node.value, ast.Dict):
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    raise ValueError(f"{envs_py}: no environment_variables dict")


def _scanned_files(tree: Path) -> list[Path]:
    return sorted([*tree.glob("vllm/**/*.py"), tree / "setup.py", tree / "CMakeLists.txt",
                   *(p for p in tree.glob("cmake/**/*") if p.is_file()),
                   *(p for p in tree.glob("csrc/**/*") if p.suffix in _CODE_SUFFIXES)])


CACHE_SCHEMA = 1


@functools.lru_cache(maxsize=4)
def tree_facts(tree: Path, cache_dir: Path | None = None) -> TreeFacts:
    """A static scan of the provisioned tree (about a second; nothing is imported).  With *cache_dir* the result
    is kept in ``vllm-names.json`` there, valid while every scanned file keeps its size and mtime."""
    tree = Path(tree)
    files = _scanned_files(tree)
    if cache_dir is None:
        return _scan_tree(tree, files)
    import hashlib

    h = hashlib.sha256(f"{CACHE_SCHEMA}\0{tree}".encode())
    for p in files:
        try:
            st = p.stat()
        except OSError:
            continue
        h.update(f"{p.relative_to(tree).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    key = h.hexdigest()
    cache = Path(cache_dir) / "vllm-names.json"
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data.get("key") == key:
            return TreeFacts(data["env_vars"], frozenset(data["identifiers"]), data["metrics"], data["has_envs"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    facts = _scan_tree(tree, files)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(json.dumps({"key": key, "env_vars": facts.env_vars, "identifiers": sorted(facts.identifiers),
                                   "metrics": facts.metrics, "has_envs": facts.has_envs}), encoding="utf-8")
        tmp.replace(cache)
    except OSError:
        pass
    return facts


def _scan_tree(tree: Path, files: list[Path]) -> TreeFacts:
    envs_py = tree / "vllm" / "envs.py"
    env_vars = {k: "vllm/envs.py" for k in sorted(_envs_keys(envs_py))} if envs_py.is_file() else {}
    idents: set[str] = set()
    metrics: dict[str, str | None] = {}
    for p in files:
        try:
            text = p.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        relp = p.relative_to(tree).as_posix()
        if "VLLM_" in text:
            idents.update(_IDENT.findall(text))
            for m in _ENV_READ.finditer(text):
                env_vars.setdefault(m.group(1) or m.group(2) or m.group(3), relp)
        if p.suffix == ".py" and relp.startswith("vllm/") and "vllm:" in text:
            for m in _METRIC_LIT.finditer(text):
                name = m.group(1)
                if text[max(0, m.start() - 12):m.start()].rstrip().endswith("startswith("):
                    continue  # a prefix test (vllm/benchmarks/serve.py), not a metric
                dm = _METRIC_DECL.search(text[max(0, m.start() - 80):m.start()])
                kind = dm.group(1).lower() if dm else None
                if kind or name not in metrics:
                    if metrics.get(name) is None:
                        metrics[name] = kind
    return TreeFacts(env_vars, frozenset(idents), metrics, envs_py.is_file())


# ---------------------------------------------------------------------------- shell words


@dataclasses.dataclass(frozen=True)
class Word:
    text: str  # with quotes removed
    line: int
    op: bool = False  # | || && ; & ( ) and redirections
    raw: str = ""


_OPS = ("&&", "||", "|&", ";;", "|", ";", "&", "(", ")")
_REDIR = re.compile(r"^(?:\d*>&\d*-?|&>>?|\d*>>?|\d*<)")
PLACEHOLDER = re.compile(r"^(?:<[^<>\s][^<>]*>|\[[^\[\]]*\]|\.\.\.|…|\{[A-Za-z_]\w*\})$")


def is_placeholder(text: str) -> bool:
    return bool(PLACEHOLDER.match(text)) or "$" in text or "<" in text and ">" in text or "…" in text


def shell_words(lines: list[tuple[int, str]]) -> tuple[list[Word], bool]:
    """Words of one logical command line (physical lines joined at ``\\`` continuations); ``no_check`` when a
    ``# vllm-book: no-check`` comment is on it."""
    words: list[Word] = []
    no_check = False
    cur, raw, cur_line, quoted = [], [], 0, False
    text = "\n".join(t for _n, t in lines)
    line_at = []
    for n, t in lines:
        line_at.extend([n] * (len(t) + 1))
    i, L = 0, len(text)

    def flush():
        nonlocal cur, raw, quoted
        if cur or quoted:
            words.append(Word("".join(cur), cur_line, False, "".join(raw)))
        cur, raw, quoted = [], [], False

    while i < L:
        c = text[i]
        ln = line_at[i] if i < len(line_at) else lines[-1][0]
        if not cur and not quoted:
            cur_line = ln
        if c == "\\" and i + 1 < L and text[i + 1] == "\n":
            i += 2
            continue
        if c in " \t\n":
            flush()
            i += 1
            continue
        if c == "#" and not cur and not quoted:
            j = text.find("\n", i)
            comment = text[i:] if j == -1 else text[i:j]
            if NO_CHECK_COMMENT.search(comment):
                no_check = True
            i = L if j == -1 else j
            continue
        if c == "'":
            j = text.find("'", i + 1)
            j = L if j == -1 else j
            cur.append(text[i + 1:j])
            raw.append(text[i:j + 1])
            quoted = True
            i = j + 1
            continue
        if c == '"':
            j = i + 1
            buf = []
            while j < L and text[j] != '"':
                if text[j] == "\\" and j + 1 < L and text[j + 1] in '"\\$`\n':
                    if text[j + 1] != "\n":
                        buf.append(text[j + 1])
                    j += 2
                    continue
                buf.append(text[j])
                j += 1
            cur.append("".join(buf))
            raw.append(text[i:j + 1])
            quoted = True
            i = j + 1
            continue
        if c == "\\" and i + 1 < L:
            cur.append(text[i + 1])
            raw.append(text[i:i + 2])
            i += 2
            continue
        if c == "$" and text[i + 1:i + 2] in ("(", "{"):
            # $(…) / ${…}: one opaque piece of the word
            close = ")" if text[i + 1] == "(" else "}"
            depth, j = 0, i + 1
            while j < L:
                if text[j] in "({":
                    depth += 1
                elif text[j] in ")}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            cur.append(text[i:j + 1])
            raw.append(text[i:j + 1])
            i = j + 1 if text[j:j + 1] == close else j + 1
            continue
        if c == "<" and not cur:
            m = re.match(r"<[A-Za-z_][\w.\-/: ]*>", text[i:])
            if m and "\n" not in m.group(0):  # <model>: a placeholder, not a redirection
                cur.append(m.group(0))
                raw.append(m.group(0))
                i += len(m.group(0))
                continue
        if c in "<>" and cur and not quoted and "".join(cur).isdigit():
            # 2>&1, 1>log: the digits are the redirection's file descriptor
            start = i - len("".join(cur))
            rm = _REDIR.match(text[start:])
            cur, raw = [], []
            words.append(Word(rm.group(0), ln, True, rm.group(0)))
            i = start + len(rm.group(0))
            continue
        if c in "|&;()<>":
            rm = _REDIR.match(text[i:]) if c in "<>&" else None
            if rm and rm.group(0) and not cur:
                flush()
                words.append(Word(rm.group(0), ln, True, rm.group(0)))
                i += len(rm.group(0))
                continue
            if c in "<>":
                flush()
                words.append(Word(c, ln, True, c))
                i += 1
                continue
            flush()
            op = next(o for o in _OPS if text.startswith(o, i)) if any(text.startswith(o, i) for o in _OPS) else c
            words.append(Word(op, ln, True, op))
            i += len(op)
            continue
        cur.append(c)
        raw.append(c)
        i += 1
    flush()
    return words, no_check


def simple_commands(words: list[Word]) -> list[list[Word]]:
    """Split at ``|``, ``&&``, ``;``…; the word after a redirection operator is dropped."""
    out: list[list[Word]] = [[]]
    skip_next = False
    for w in words:
        if skip_next:
            skip_next = False
            continue
        if w.op:
            if w.text in _OPS:
                out.append([])
            else:
                skip_next = not re.search(r"&\d*-?$", w.text)  # 2>&1 has its target attached
            continue
        out[-1].append(w)
    return [c for c in out if c]


_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_PY = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)?)?$")


@dataclasses.dataclass
class Invocation:
    program: str  # "vllm" | "python -m <module>"
    args: list[Word]
    line: int
    env: list[Word]  # VAR=value prefixes


def invocation(cmd: list[Word]) -> Invocation | None:
    """The vLLM program a simple command runs, or ``None``."""
    i = 0
    env: list[Word] = []
    while i < len(cmd):
        t = cmd[i].text
        if _ASSIGN.match(t):
            env.append(cmd[i])
            i += 1
            continue
        if t in WRAPPERS:
            i += 1
            if t == "uv" and i < len(cmd) and cmd[i].text == "run":
                i += 1
            while i < len(cmd) and cmd[i].text.startswith("-"):
                i += 1
            if t == "timeout" and i < len(cmd):
                i += 1
            continue
        break
    if i >= len(cmd):
        return None
    prog = cmd[i].text
    if prog == "vllm" or prog.endswith("/vllm"):
        return Invocation("vllm", cmd[i + 1:], cmd[i].line, env)
    if _PY.match(prog):
        j = i + 1
        while j < len(cmd) and cmd[j].text.startswith("-") and cmd[j].text not in ("-m", "-c") \
                and not cmd[j].text.startswith("-m"):
            j += 1
        if j < len(cmd) and (cmd[j].text == "-m" or cmd[j].text.startswith("-m")):
            mod = cmd[j].text[2:] or (cmd[j + 1].text if j + 1 < len(cmd) else "")
            rest = cmd[j + 1:] if cmd[j].text != "-m" else cmd[j + 2:]
            if mod == "vllm" or mod.startswith("vllm."):
                if mod in ("vllm.entrypoints.cli.main",):
                    return Invocation("vllm", rest, cmd[i].line, env)
                return Invocation(f"python -m {mod}", rest, cmd[i].line, env)
    return None


# ---------------------------------------------------------------------------- argparse, as vLLM runs it


@dataclasses.dataclass(frozen=True)
class Issue:
    line: int
    kind: str  # command | variable | metric
    name: str
    message: str
    closest: str = ""


_NEG_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


_SUGGEST = True  # False while _check_inline_options only tries parsers (difflib is the costly part)


def closest(name: str, candidates, cutoff: float = 0.55) -> str:
    """The most similar candidate (difflib), ties and near-ties broken by the longer common prefix:
    ``VLLM_USE_V1`` → ``VLLM_USE_V2_MODEL_RUNNER`` rather than ``VLLM_CPU_CI_ENV``."""
    if not _SUGGEST:
        return ""
    cands = difflib.get_close_matches(name, list(candidates), n=8, cutoff=cutoff)
    if not cands:
        return ""

    def score(c: str) -> float:
        common = len(os.path.commonprefix([name, c]))
        return difflib.SequenceMatcher(None, name, c).ratio() + 0.5 * common / max(len(name), 1)

    return max(cands, key=lambda c: (score(c), c == cands[0]))


def _flexible_rewrite(parser: Parser, args: list[Word]) -> list[tuple[Word, str, list[str] | None]]:
    """``FlexibleArgumentParser.parse_args``'s rewriting, word by word: (word, the arg argparse sees,
    the dotted keys of a ``--json-arg.key`` word or ``None``)."""
    out: list[tuple[Word, str, list[str] | None]] = []
    for w in args:
        a = w.text
        if not parser.flexible or is_placeholder(a):
            out.append((w, a, None))
            continue
        if a.startswith("--help="):
            out.append((w, "--help", None))
        elif a.startswith("--"):
            key, eq, value = a.partition("=")
            head, dot, tail = key[2:].partition(".")
            key = "--" + head.replace("_", "-") + dot + tail
            a2 = key + eq + value
            if "." in key:
                base, *keys = key.split(".")
                out.append((w, base + eq + value if eq else base, keys))
            else:
                out.append((w, a2, None))
        elif a.startswith("-O") and a != "-O":
            out.append((w, "--optimization-level=" + (a[3:] if a[2:3] == "=" else a[2:]), None))
        elif a == "-O":
            out.append((w, "--optimization-level", None))
        elif a.startswith("-") and "." in a and not _NEG_NUMBER.match(a.split("=", 1)[0]):
            key, eq, value = a.partition("=")
            if "." in key:
                base, *keys = key.split(".")
                out.append((w, base + eq + value if eq else base, keys))
            else:
                out.append((w, a, None))
        else:
            out.append((w, a, None))
    return out


def _match_option(parser: Parser, arg: str) -> tuple[Option | None, str, str | None, str]:
    """argparse's ``_parse_optional``: (option, the option string matched, explicit value, error)."""
    if arg in parser.options:
        return parser.options[arg], arg, None, ""
    if "=" in arg:
        head, value = arg.split("=", 1)
        if head in parser.options:
            return parser.options[head], head, value, ""
    cands: dict[int, tuple[Option, str, str | None]] = {}
    if arg.startswith("--"):
        if parser.allow_abbrev:
            prefix, _eq, value = arg.partition("=")
            for s, opt in parser.options.items():
                if s.startswith(prefix):
                    cands.setdefault(id(opt), (opt, s, value if _eq else None))
    elif len(arg) > 1:
        short, short_value = arg[:2], arg[2:]
        for s, opt in parser.options.items():
            if s == short:
                cands.setdefault(id(opt), (opt, s, short_value))
            elif s.startswith(arg):
                cands.setdefault(id(opt), (opt, s, None))
    if len(cands) > 1:
        found = sorted(c[1] for c in cands.values())
        names = ", ".join(found[:6]) + (f", … ({len(found)} in all)" if len(found) > 6 else "")
        return None, arg, None, f"ambiguous option {arg.split('=')[0]} (could match {names})"
    if len(cands) == 1:
        opt, s, value = next(iter(cands.values()))
        return opt, s, value, ""
    return None, arg, None, "unknown"


def _looks_like_option(parser: Parser, text: str) -> bool:
    return text.startswith("-") and text != "-" and not _NEG_NUMBER.match(text) and " " not in text


def _check_value(opt: Option, shown: str, value: str, w: Word, prog: str, keys: list[str] | None) -> list[Issue]:
    if is_placeholder(value) or value == "":
        return []
    out: list[Issue] = []
    bad = _type_error(opt, value)
    if bad and keys is None:
        out.append(Issue(w.line, "command", value, f"{shown} of `{prog}` takes {bad}, not {value!r}"))
    if opt.choices is not None and keys is None and value not in {str(c) for c in opt.choices}:
        out.append(Issue(w.line, "command", value, f"invalid choice {value!r} for {shown} of `{prog}`",
                         closest(value, [str(c) for c in opt.choices])))
    if opt.json_fields is not None and keys is None and value.lstrip().startswith(("{", "[")):
        try:
            obj = json.loads(value)
        except ValueError as exc:
            return out + [Issue(w.line, "command", value, f"the value of {shown} of `{prog}` is not valid JSON ({exc})")]
        if isinstance(obj, dict):
            for k in obj:
                if k not in opt.json_fields:
                    out.append(Issue(w.line, "command", k, f"{shown} of `{prog}` has no field {k!r}",
                                     closest(k, opt.json_fields)))
    elif opt.json_value and keys is None and value.lstrip().startswith(("{", "[")):
        try:
            json.loads(value)
        except ValueError as exc:
            out.append(Issue(w.line, "command", value, f"the value of {shown} of `{prog}` is not valid JSON ({exc})"))
    return out


_HUMAN_INT = re.compile(r"^\s*(?:\d+(?:\.\d+)?[kmgt]|\d+[KMGT]|-?\d+)\s*$")


def _type_error(opt: Option, value: str) -> str:
    """What the option's converter would reject *value* for ("" when it takes it)."""
    t = opt.value_type
    if not t or (opt.none_ok and value in ("", "None")):
        return ""
    try:
        if t == "int":
            int(value)
        elif t == "float":
            float(value)
        elif t == "loads":
            json.loads(value)
        elif t in ("human_readable_int", "human_readable_int_or_auto"):
            if not (_HUMAN_INT.match(value) or (t.endswith("auto") and value.strip().lower() in ("auto", "-1"))):
                raise ValueError(value)
    except ValueError:
        return {"int": "an integer", "float": "a number", "loads": "JSON"}.get(
            t, "an integer such as 8192, 8k or 8K" + (" (or auto)" if t.endswith("auto") else ""))
    return ""


def check_args(parser: Parser, args: list[Word], line: int, *, options_only: bool = False) -> list[Issue]:
    """Parse *args* as *parser* (and its subcommands) would; the problems found.  *options_only*: an inline run
    of options, with no command around it (positionals are not counted)."""
    issues: list[Issue] = []
    items = _flexible_rewrite(parser, args)
    pos_i = 0
    npos = 0
    i = 0
    rest_positional = False
    while i < len(items):
        w, a, keys = items[i]
        i += 1
        if is_placeholder(a) and not a.startswith("-"):
            if parser.subcommands and npos == 0:
                return issues  # `vllm <subcommand> …`: nothing more to say
            npos += 1
            continue
        if not rest_positional and a == "--":
            rest_positional = True
            continue
        if not rest_positional and _looks_like_option(parser, a):
            if is_placeholder(a):
                continue
            opt, s, value, err = _match_option(parser, a)
            if opt is None:
                name = a.split("=", 1)[0]
                if err != "unknown":
                    issues.append(Issue(w.line, "command", name, f"{err} in `{parser.prog}`"))
                    continue
                shown = w.text.split("=", 1)[0].split(".", 1)[0] if keys else w.text.split("=", 1)[0]
                near = closest(name, [o for o in parser.options if o.startswith("--") == name.startswith("--")]
                               or parser.options)
                issues.append(Issue(w.line, "command", shown, f"unknown option {shown} of `{parser.prog}`", near))
                while "=" not in a and i < len(items) and not _looks_like_option(parser, items[i][1]) \
                        and not (parser.subcommands and npos == 0):
                    i += 1  # its values, as far as one can tell: not reported again as positionals
                continue
            if keys is not None:
                if not opt.takes_value:
                    issues.append(Issue(w.line, "command", w.text, f"{s} of `{parser.prog}` takes no value, so "
                                        f"the dotted key {'.'.join(keys)} cannot be set"))
                    continue
                if value is None:
                    if i < len(items):
                        i += 1
                    elif not options_only:
                        issues.append(Issue(w.line, "command", s, f"{w.text} of `{parser.prog}` expects a value"))
                if opt.json_fields is not None and keys and keys[0].removesuffix("+") not in opt.json_fields:
                    k = keys[0].removesuffix("+")
                    issues.append(Issue(w.line, "command", k, f"{s} of `{parser.prog}` has no field {k!r}",
                                        closest(k, opt.json_fields)))
                continue
            if not opt.takes_value:
                if value is not None and value != "":
                    issues.append(Issue(w.line, "command", w.text, f"{s} of `{parser.prog}` is a flag and takes no "
                                        f"value (got {w.text!r})"))
                continue
            if value is not None:
                issues += _check_value(opt, s, value, w, parser.prog, None)
                continue
            nargs = opt.nargs
            need = 1 if nargs is None else nargs if isinstance(nargs, int) else 0 if nargs in ("?", "*") else 1
            many = nargs in ("*", "+") or nargs == "..."
            got = 0
            while i < len(items) and (got < need or many or (nargs == "?" and got == 0)):
                nw, na, _k = items[i]
                if nargs != "..." and _looks_like_option(parser, na) and not is_placeholder(na):
                    break
                issues += _check_value(opt, s, nw.text, nw, parser.prog, None)
                got += 1
                i += 1
                if nargs == "?" or (not many and got >= need):
                    break
            if got < need and not (options_only and i >= len(items)):  # prose may name an option alone
                what = "a value" if need == 1 else f"{need} values"
                issues.append(Issue(w.line, "command", s, f"{s} of `{parser.prog}` expects {what}"))
            continue
        # a positional
        if parser.subcommands and npos == 0 and not rest_positional:
            sub = parser.subcommands.get(a)
            if sub is None:
                names = sorted(parser.subcommands)
                issues.append(Issue(w.line, "command", a, f"`{parser.prog}` has no subcommand {a!r} "
                                    f"(it has: {', '.join(names)})", closest(a, names)))
                return issues
            return issues + check_args(sub, [x[0] for x in items[i:]], line, options_only=options_only)
        npos += 1
        if options_only:
            continue
        # count against the declared positionals
        while pos_i < len(parser.positionals):
            p = parser.positionals[pos_i]
            n = p.get("nargs")
            if n in ("*", "+", "...", "A..."):
                break  # takes the rest
            pos_i += 1
            break
        else:
            issues.append(Issue(w.line, "command", a, f"`{parser.prog}` takes no further positional argument "
                                f"(got {a!r}: argparse stops with 'unrecognized arguments')"))
    return issues


def _elsewhere(spec: Spec, name: str, prog: str) -> str:
    """`` (an option of `vllm bench serve`)`` when another parser of the release has *name*."""
    progs = sorted({p.prog for p in spec.flat() if name in p.options and p.prog != prog},
                   key=lambda x: (not x.startswith("vllm "), x))
    return f" ({name} is an option of `{progs[0]}`)" if progs else ""


def check_invocation(spec: Spec, inv: Invocation, tree: Path | None) -> list[Issue]:
    issues = _check_invocation(spec, inv, tree)
    out = []
    for i in issues:
        if i.message.startswith("unknown option "):
            prog = i.message.split("`")[1] if "`" in i.message else ""
            i = dataclasses.replace(i, message=i.message + _elsewhere(spec, i.name, prog))
        out.append(i)
    return out


def _check_invocation(spec: Spec, inv: Invocation, tree: Path | None) -> list[Issue]:
    parser = spec.programs.get(inv.program)
    if parser is None:
        mod = inv.program.removeprefix("python -m ")
        if tree is not None and not _module_exists(tree, mod):
            mods = _modules(tree)
            return [Issue(inv.line, "command", mod, f"no module {mod} in the tree (python -m {mod})",
                          closest(mod, mods))]
        return []  # a module with no dumped parser: nothing to check against
    return check_args(parser, inv.args, inv.line)


def _module_exists(tree: Path, mod: str) -> bool:
    p = tree.joinpath(*mod.split("."))
    return p.with_suffix(".py").is_file() or (p / "__main__.py").is_file() or (p / "__init__.py").is_file()


@functools.lru_cache(maxsize=2)
def _modules(tree: Path) -> tuple[str, ...]:
    return tuple(sorted(p.relative_to(tree).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
                        for p in (tree / "vllm").rglob("*.py")))


# ---------------------------------------------------------------------------- names in text

_ENV_NAME = re.compile(r"(?<![A-Za-z0-9_])(?P<pre>\$\{?|export\s+|envs\.|environ\[\s*[\"']|getenv\(\s*[\"'])?"
                       r"(?P<name>VLLM_[A-Z0-9_]*[A-Z0-9_])(?P<star>\*)?(?P<post>=)?")
_METRIC_NAME = re.compile(r"(?<![A-Za-z0-9_:])(?P<name>vllm:[a-z_][a-z0-9_:]*)(?P<star>\*)?")


def check_names(text: str, line: int, facts: TreeFacts, stats: dict[str, set]) -> list[Issue]:
    out: list[Issue] = []
    for m in _ENV_NAME.finditer(text):
        name = m.group("name")
        if m.group("star") or name.endswith("_"):
            prefix = name.rstrip("*")
            stats["variables"].add(prefix + "*")
            if not any(v.startswith(prefix) for v in facts.env_vars):
                out.append(Issue(line, "variable", prefix + "*", f"no environment variable of the tree starts with "
                                 f"{prefix}", closest(prefix, facts.env_vars)))
            continue
        if name.endswith("_"):
            continue
        stats["variables"].add(name)
        as_var = bool(m.group("pre") or m.group("post"))
        if name in facts.env_vars:
            continue
        if not as_var and name in facts.identifiers:
            stats["identifiers"].add(name)
            continue
        what = ("is not an environment variable of the tree (it is an identifier of the code, not read from the "
                "environment)" if name in facts.identifiers else "is not an environment variable of the tree")
        out.append(Issue(line, "variable", name, f"{name} {what}", closest(name, facts.env_vars)))
    for m in _METRIC_NAME.finditer(text):
        name = m.group("name").rstrip(":")
        if m.group("star") or name.endswith("_"):
            stats["metrics"].add(name + "*")
            if not any(x.startswith(name) for x in facts.exposed):
                out.append(Issue(line, "metric", name + "*", f"no metric of the tree starts with {name}",
                                 closest(name, facts.metrics)))
            continue
        stats["metrics"].add(name)
        if name in facts.exposed:
            continue
        near = closest(name, facts.exposed)
        base = next((name[: -len(s)] for s in SUFFIXES[None] if name.endswith(s) and name[: -len(s)] in facts.metrics),
                    None)
        if base is not None:
            kind = facts.metrics[base]
            out.append(Issue(line, "metric", name, f"{name} is not exposed: {base} is a {kind}, which has no "
                             f"{name[len(base):]} series", base))
        else:
            out.append(Issue(line, "metric", name, f"{name} is not a metric of the tree", near))
    return out


# ---------------------------------------------------------------------------- pages

_INLINE_CMD = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(?:vllm(?:\s|$)|python3?(?:\.\d+)?\s+-m\s*vllm[.\s])")
_INLINE_OPTS = re.compile(r"^--?[A-Za-z]")
_PROSE_OPT = re.compile(r"(?<![\w/-])--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*(?![\w-])")
_SHORT_OK = re.compile(r"^-(?:[A-Za-z]{1,3}|O\S*)$")


#: a console prompt: ``$ ``, ``(venv) $ ``, ``user@host:~/dir$ ``
_PROMPT = re.compile(r"^(?:\([^()\s]*\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^$\s]*)?)?\$(?:\s|$)")


_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def _block_commands(block: mdscan.CodeBlock) -> list[tuple[list[tuple[int, str]], bool]]:
    """(physical lines, prompt line) of each logical command line of a shell block."""
    prompt_lang = block.lang in PROMPT_LANGS
    cmds: list[tuple[list[tuple[int, str]], bool]] = []
    cont: list[tuple[int, str]] | None = None
    heredoc: str | None = None
    for n, t in block.lines:
        if heredoc is not None:  # the body of a here-document is data, not commands
            if t.strip() == heredoc:
                heredoc = None
            continue
        if cont is not None:
            cont.append((n, t))
            if not t.rstrip().endswith("\\"):
                cont = None
            continue
        s = t.lstrip()
        if prompt_lang:
            m = _PROMPT.match(s)
            if not m:
                continue  # output
            body = s[m.end():]
        else:
            m = _PROMPT.match(s)  # a `$ ` prompt in a bash block: the same command
            body = s[m.end():] if m else s
            if not body or body.startswith("#"):
                continue
        hm = _HEREDOC.search(body)
        if hm:
            heredoc = hm.group(2)
        cur = [(n, body)]
        cmds.append((cur, prompt_lang))
        if body.rstrip().endswith("\\"):
            cont = cur
    return cmds


def check_page(page: mdscan.Page, spec: Spec | None, facts: TreeFacts | None, tree: Path | None,
               stats: dict[str, set]) -> list[Issue]:
    """Every problem of one page (*spec* ``None``: commands are collected but cannot be checked)."""
    issues: list[Issue] = []
    needs_spec: list[int] = []
    for block in page.code_blocks:
        opted = NO_CHECK_CLASS in block.classes
        if opted:
            continue
        if block.lang in SHELL_LANGS:
            command_lines = {n for lines, _p in _block_commands(block) for n, _t in lines}
            for lines, _prompt in _block_commands(block):
                words, no_check = shell_words(lines)
                if no_check:
                    continue
                for cmd in simple_commands(words):
                    inv = invocation(cmd)
                    for w in cmd:
                        if facts is not None and _ASSIGN.match(w.text):
                            issues += check_names(w.text, w.line, facts, stats)
                    if inv is None:
                        continue
                    stats["commands"].add((page.docname, inv.line, " ".join(w.text for w in cmd)))
                    stats["block_commands"].add((page.docname, inv.line, " ".join(w.text for w in cmd)))
                    if spec is None:
                        needs_spec.append(inv.line)
                        continue
                    issues += check_invocation(spec, inv, tree)
            if facts is not None:
                for n, t in block.lines:
                    if NO_CHECK_COMMENT.search(t):
                        continue
                    # assignments in command words were checked above; the rest of the text for names
                    text = t if n not in command_lines else re.sub(r"(?<![A-Za-z0-9_])VLLM_[A-Z0-9_]+=\S*", " ", t)
                    issues += check_names(text, n, facts, stats)
        elif facts is not None:
            for n, t in block.lines:
                if not NO_CHECK_COMMENT.search(t):
                    issues += check_names(t, n, facts, stats)
    for sp in page.spans:
        if NO_CHECK_CLASS in sp.classes:
            continue
        if facts is not None:
            issues += check_names(sp.text, sp.line, facts, stats)
        if not sp.code:
            if spec is not None:  # a bare option in prose (a heading, a table cell): its name only
                for m in _PROSE_OPT.finditer(sp.text):
                    stats["options"].add((page.docname, sp.line, m.group(0)))
                    issues += _check_inline_options(spec, [Word(m.group(0), sp.line)], sp.line)
            continue
        text = sp.text.strip()
        if _INLINE_CMD.match(text):
            words, no_check = shell_words([(sp.line, text)])
            for cmd in simple_commands(words):
                inv = invocation(cmd)
                if inv is None or no_check:
                    continue
                stats["commands"].add((page.docname, sp.line, text))
                if spec is None:
                    needs_spec.append(sp.line)
                    continue
                issues += check_invocation(spec, inv, tree)
        elif _INLINE_OPTS.match(text) and spec is not None:
            words, _nc = shell_words([(sp.line, text)])
            if any(w.op for w in words):
                continue
            first = words[0].text if words else ""
            if not first.startswith("--") and not _SHORT_OK.match(first):
                continue  # -name, -rn…: not taken for a vLLM option
            stats["options"].add((page.docname, sp.line, text))
            issues += _check_inline_options(spec, words, sp.line)
    if needs_spec:
        stats["unchecked"].update((page.docname, n) for n in needs_spec)
    return issues


def _check_inline_options(spec: Spec, words: list[Word], line: int) -> list[Issue]:
    """A run of options in prose (`` `--max-num-seqs 256` ``): fine when one parser of the release takes it
    (``vllm serve`` first, then ``vllm bench …``); otherwise the problems of the closest parser."""
    global _SUGGEST
    best: list[Issue] | None = None
    best_p = None
    _SUGGEST = False
    try:
        for p in spec.flat():
            got = check_args(p, words, line, options_only=True)
            if not got:
                return []
            if best is None or len(got) < len(best):
                best, best_p = got, p
    finally:
        _SUGGEST = True
    best = check_args(best_p, words, line, options_only=True) if best_p is not None else []
    names = sorted({o for p in spec.flat() for o in p.options})
    return [dataclasses.replace(i, message=i.message.split(" of `")[0] + " of any vllm command",
                                closest=closest(i.name, names) or i.closest)
            if i.message.startswith("unknown option") else i for i in best or []]


def check_pages(root: Path, pages: list[mdscan.Page], tree: Path | None, version: str | None,
                cache_dir: Path | None = None) -> tuple[list[Problem], dict[str, object]]:
    """The commands/variables/metrics checks of ``make validate``."""
    stats: dict[str, set] = {k: set() for k in ("commands", "block_commands", "options", "variables", "identifiers",
                                               "metrics", "unchecked")}
    out: list[Problem] = []
    spec = None
    spec_problem = None
    if version:
        sp = spec_path(version)
        if sp.is_file():
            try:
                spec = load_spec(sp)
            except (OSError, ValueError, KeyError) as exc:
                spec_problem = f"{rel(root, sp)} is not a CLI spec ({exc})"
            else:
                if spec.version != version:
                    spec_problem = f"{rel(root, sp)} was dumped from vLLM {spec.version}, the pin is {version}"
                    spec = None
        else:
            spec_problem = f"no CLI spec for vLLM {version} ({rel(root, sp)})"
    facts = None
    if tree is not None:
        try:
            facts = tree_facts(Path(tree).resolve(), Path(cache_dir) if cache_dir else None)
        except (OSError, ValueError, SyntaxError) as exc:
            out.append(Problem("vllm-pin.toml", 1, f"cannot scan the tree for variables and metrics: {exc}",
                               "run: make vllm", "variables"))
    for page in pages:
        f = rel(root, page.path)
        for iss in check_page(page, spec, facts, tree, stats):
            msg = iss.message + (f" — closest: {iss.closest}" if iss.closest else "")
            if iss.kind == "command":
                fix = (f"use {iss.closest}" if iss.closest else "correct it against the pinned release") + \
                      f" (vLLM {spec.version if spec else version} parser: {rel(root, spec.path) if spec else 'the CLI spec'})"
            elif iss.kind == "variable":
                fix = (f"use {iss.closest}" if iss.closest else "name a variable of vllm/envs.py") + \
                      " (vllm/envs.py; or a name the tree reads with os.environ/os.getenv)"
            else:
                fix = (f"use {iss.closest}" if iss.closest else "name a metric of the tree") + \
                      " (metric names: string literals \"vllm:…\" under vllm/, e.g. vllm/v1/metrics/loggers.py)"
            fix += f"; an intentional counter-example: mark it {{.{NO_CHECK_CLASS}}} or # vllm-book: no-check"
            check = {"command": "commands", "variable": "variables", "metric": "metrics"}[iss.kind]
            out.append(Problem(f, iss.line, msg, fix, check))
    if facts is not None and not facts.has_envs and stats["variables"]:
        out.append(Problem("vllm-pin.toml", 1, f"{len(stats['variables'])} VLLM_* names were checked without "
                           "vllm/envs.py: the provisioned tree has none", "re-provision: make vllm", "variables"))
    if stats["unchecked"] and spec_problem:
        first = sorted(stats["unchecked"])[0]
        page = next(p for p in pages if p.docname == first[0])
        out.append(Problem(rel(root, page.path), first[1],
                           f"{len(stats['unchecked'])} vLLM command lines were not checked: {spec_problem}",
                           "run: make cli-spec (installs the pinned vLLM into .venv-vllm, 7 GB, and dumps its parsers)",
                           "commands"))
    counts = {"commands": len(stats["commands"]), "block_commands": len(stats["block_commands"]),
              "inline_options": len(stats["options"]),
              "variables": len(stats["variables"]), "identifiers": len(stats["identifiers"]),
              "metrics": len(stats["metrics"])}
    return out, counts
