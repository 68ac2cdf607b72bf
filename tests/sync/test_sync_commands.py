"""Machine-checked commands (``sync/commands.py``): command lines against the committed CLI spec of the pinned
vLLM, ``VLLM_*`` names against ``envs.py``, ``vllm:*`` metrics against the tree; and the spec against the real
parser (needs ``.venv-vllm``: skipped locally without it, a failure under ``CI=true``)."""

from __future__ import annotations

import argparse
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from sync_helpers import REPO, needs_ctags
from vllm_book import pin as pin_mod
from vllm_book.sync import commands as C
from vllm_book.sync import mdscan, validate

PIN = pin_mod.load_pin(REPO)
SPEC_FILE = C.spec_path(PIN.version)


@pytest.fixture(scope="module")
def spec() -> C.Spec:
    return C.load_spec(SPEC_FILE)


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A small vLLM tree: envs.py, a variable read outside it, an enum member, metrics of each type."""
    t = tmp_path_factory.mktemp("tree")
    files = {
        "vllm/envs.py": '''
            import os
            if TYPE_CHECKING:
                VLLM_PORT: int | None = None
            environment_variables: dict[str, Callable[[], Any]] = {
                "VLLM_PORT": lambda: os.getenv("VLLM_PORT"),
                "VLLM_LOGGING_LEVEL": lambda: os.getenv("VLLM_LOGGING_LEVEL", "INFO"),
                "VLLM_USE_V2_MODEL_RUNNER": lambda: bool(int(os.getenv("VLLM_USE_V2_MODEL_RUNNER", "0"))),
                "VLLM_ENABLE_V1_MULTIPROCESSING": lambda: bool(int(os.getenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1"))),
            }
        ''',
        "vllm/platforms/cpu.py": 'import os\nCI = os.environ.get("VLLM_CPU_CI_ENV", "0")\n',
        "vllm/config/compilation.py": "class CompilationMode:\n    NONE = 0\n    VLLM_COMPILE = 3\n",
        "vllm/v1/metrics/loggers.py": '''
            g = self._gauge_cls(name="vllm:kv_cache_usage_perc", documentation="")
            c = self._counter_cls(
                name="vllm:prefix_cache_hits", documentation="")
            h = self._histogram_cls(name="vllm:time_to_first_token_seconds", documentation="")
            f = self._counter_cls(name="vllm:estimated_flops_per_gpu_total", documentation="")
        ''',
        "vllm/benchmarks/serve.py": 'if line.startswith("vllm:spec_decode"):\n    pass\n',
        "vllm/entrypoints/openai/api_server.py": "",
        "CMakeLists.txt": "set(VLLM_STABLE_EXT_SRC a.cu)\n",
    }
    for rel, text in files.items():
        p = t / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    C.tree_facts.cache_clear()
    return t


def check(tmp_path: Path, text: str, tree: Path, version: str = PIN.version) -> list[str]:
    src = tmp_path / "source"
    src.mkdir(exist_ok=True)
    md = src / "ch.md"
    md.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    problems, _stats = C.check_pages(tmp_path, [mdscan.scan(md, src)], tree, version)
    return [f"{p.file}:{p.line}: {p.message}" for p in sorted(set(problems), key=lambda p: (p.line, p.message))]


def cmd_issues(spec: C.Spec, line: str) -> list[str]:
    words, _nc = C.shell_words([(1, line)])
    out = []
    for cmd in C.simple_commands(words):
        inv = C.invocation(cmd)
        if inv is not None:
            out += [i.message + (f" — closest: {i.closest}" if i.closest else "") for i in C.check_invocation(spec, inv, None)]
    return out


# ---------------------------------------------------------------------------- the committed spec


def test_spec_is_the_pinned_release_and_has_the_parsers_the_book_uses(spec):
    assert spec.version == PIN.version
    vllm = spec.programs["vllm"]
    assert {"serve", "bench", "chat", "complete", "run-batch", "collect-env"} <= set(vllm.subcommands)
    assert {"serve", "latency", "throughput"} <= set(vllm.subcommands["bench"].subcommands)
    assert "python -m vllm.entrypoints.openai.api_server" in spec.programs
    serve = vllm.subcommands["serve"]
    assert serve.flexible and serve.allow_abbrev  # FlexibleArgumentParser keeps argparse's default
    pair = serve.options["--enable-prefix-caching"]
    assert pair is serve.options["--no-enable-prefix-caching"] and not pair.takes_value
    assert serve.options["-tp"] is serve.options["--tensor-parallel-size"]
    assert serve.options["--kv-cache-dtype"].choices and "fp8" in serve.options["--kv-cache-dtype"].choices
    assert "backend" in serve.options["-ac"].json_fields


def test_spec_file_is_deterministic_text():
    text = SPEC_FILE.read_text(encoding="utf-8")
    for needle in ("/work/", "/root/", "/tmp/", "site-packages", str(Path.home()) + "/"):
        assert needle not in text, needle
    import json

    assert json.dumps(json.loads(text), indent=1, sort_keys=True, ensure_ascii=False) + "\n" == text


# ---------------------------------------------------------------------------- command lines


def test_wrong_flag_fails_with_the_line_and_the_closest_flag(tmp_path, tree):
    got = check(tmp_path, """
        # T

        ```console
        $ vllm serve meta-llama/Meta-Llama-3-8B \\
            --tensor-parallel-size 2 \\
            --gpu-mem-util 0.9
        INFO output line --not-checked
        ```
    """, tree)
    assert got == ["source/ch.md:6: unknown option --gpu-mem-util of `vllm serve` — closest: --gpu-memory-utilization"]


@pytest.mark.parametrize("line", [
    "vllm serve m --no-enable-prefix-caching",
    "vllm serve m --enable-prefix-caching --no-async-scheduling",
    "vllm serve m --gpu-memory 0.9",  # a unique prefix: argparse's allow_abbrev
    "vllm serve m --enable-prefix-cach",
    "vllm serve m --max_num_seqs 8",  # FlexibleArgumentParser: underscores
    "vllm serve m --tensor-parallel-size=2 -pp 2",
    "vllm serve m -O3",
    "vllm serve m -O 0",
    "vllm serve m --max-model-len 8k --max-num-batched-tokens 8K",
    "vllm serve <model> --port $PORT --host ${HOST:-0.0.0.0}",
    "vllm serve --model m",
    "VLLM_LOGGING_LEVEL=DEBUG CUDA_VISIBLE_DEVICES=0,1 vllm serve m -tp 2 2>&1 | tee log && echo ok",
    "vllm serve m -ac '{\"backend\": \"FLASHINFER\"}'",
    "vllm serve m --attention-config.flash_attn_version=2",
    "vllm serve m --compilation-config '{\"custom_ops\": [\"+rotary_embedding\"]}'",
    "vllm serve m --help=all",
    "vllm bench serve --model m --goodput ttft:500 tpot:50 --percentile-metrics ttft,tpot",
    "vllm bench latency --model m --input-len 32",
    "vllm bench throughput --model m",
    "python -m vllm.entrypoints.openai.api_server --model m --port 8000",
    "python3 -m vllm.entrypoints.cli.main serve m",
    "nohup vllm serve m > log 2>&1 &",
])
def test_valid_command_lines_pass(spec, line):
    assert cmd_issues(spec, line) == []


@pytest.mark.parametrize("line, message", [
    ("vllm serve m --gpu-mem-util 0.9", "unknown option --gpu-mem-util of `vllm serve` — closest: --gpu-memory-utilization"),
    ("vllm serve m --enable", "ambiguous option --enable (could match"),
    ("vllm serve m --enforce-eager=1", "--enforce-eager of `vllm serve` is a flag and takes no value"),
    ("vllm serve m -tp", "-tp of `vllm serve` expects a value"),
    ("vllm serve m --block-size 16k", "--block-size of `vllm serve` takes an integer, not '16k'"),
    ("vllm serve m --kv-cache-dtype fp9", "invalid choice 'fp9' for --kv-cache-dtype of `vllm serve` — closest: fp8"),
    ("vllm serve m extra", "`vllm serve` takes no further positional argument"),
    ("vllm serve m -ac '{\"backnd\": \"X\"}'", "-ac of `vllm serve` has no field 'backnd' — closest: backend"),
    ("vllm serve m --attention-config.flash_attn_versio=2", "has no field 'flash_attn_versio' — closest: flash_attn_version"),
    ("vllm serve m --compilation-config '{bad'", "is not valid JSON"),
    ("vllm bench serv --model m", "`vllm bench` has no subcommand 'serv'"),
    ("vllm bench serve --model m --goodputt ttft:1", "unknown option --goodputt of `vllm bench serve` — closest: --goodput"),
    ("VLLM_X=1 vllm serve m --gpu-mem-util 0.9 | tee log", "unknown option --gpu-mem-util"),
    ("vllm serve m --goodput ttft:500", "(--goodput is an option of `vllm bench serve`)"),
])
def test_wrong_command_lines_fail(spec, line, message):
    got = cmd_issues(spec, line)
    assert len(got) == 1 and message in got[0], got


def _argparse_from(p: C.Parser) -> argparse.ArgumentParser:
    """A plain argparse parser with the spec's option strings and arities, to compare the checker with."""
    ap = argparse.ArgumentParser(prog=p.prog, allow_abbrev=p.allow_abbrev, add_help=False, exit_on_error=False)
    seen = set()
    for opt in p.options.values():
        if id(opt) in seen:
            continue
        seen.add(id(opt))
        if opt.takes_value:
            nargs = opt.nargs if opt.nargs not in ("==SUPPRESS==",) else None
            ap.add_argument(*opt.strings, dest=opt.dest, nargs=nargs)
        else:
            ap.add_argument(*opt.strings, dest=opt.dest, action="store_true")
    ap.add_argument("model_tag", nargs="?")
    return ap


@pytest.mark.parametrize("args", [
    "--gpu-mem 0.9", "--gpu-mem-util 0.9", "--enable", "--enable-pref", "--no-enable-pref", "--tensor 2", "-tp 2",
    "-tp2", "-t 2", "--max-num 3", "--max-num-s 3", "--port=8000", "--enforce", "--no-enf", "--disable-log-st",
])
def test_abbreviations_are_judged_as_argparse_judges_them(spec, args):
    serve = spec.programs["vllm"].subcommands["serve"]
    ap = _argparse_from(serve)
    argv = ["m", *args.split()]
    try:
        ns, extra = ap.parse_known_args(argv)
        real_ok = not extra
    except (argparse.ArgumentError, SystemExit):
        real_ok = False
    ours_ok = not cmd_issues(spec, "vllm serve " + " ".join(argv))
    assert ours_ok == real_ok, (args, cmd_issues(spec, "vllm serve " + " ".join(argv)))


def test_inline_code_commands_and_option_runs(tmp_path, tree):
    got = check(tmp_path, """
        # T

        `vllm serve --headless` and `vllm bench serve` are fine, so are `--max-num-seqs`, `-tp`, `-O3`,
        `--no-enable-chunked-prefill --max-num-batched-tokens 4096` and `--goodput`; `-name` is not an option.

        `--gpu-mem-util` is wrong, and so is `vllm serve --max-num-seq 1 --enforce-eager=yes`.
    """, tree)
    assert got == [
        "source/ch.md:6: --enforce-eager of `vllm serve` is a flag and takes no value (got '--enforce-eager=yes')",
        "source/ch.md:6: unknown option --gpu-mem-util of any vllm command — closest: --gpu-memory-utilization",
    ]


def test_opt_outs(tmp_path, tree):
    got = check(tmp_path, """
        # T

        ```{code-block} console
        :class: no-cmd-check

        $ vllm serve m --gpu-mem-util 0.9
        ```

        {.no-cmd-check}
        ```bash
        VLLM_NOPE=1 vllm serve m --nope
        ```

        ```bash
        vllm serve m --gpu-mem-util 0.9  # vllm-book: no-check (the old spelling)
        vllm serve m --gpu-mem-util 0.9
        ```

        The removed `VLLM_USE_V1`{.no-cmd-check} and `--gpu-mem-util`{.no-cmd-check}; but `VLLM_USE_V1`.

        {.no-cmd-check}
        A whole paragraph: `VLLM_USE_V1`,
        `vllm serve --gpu-mem-util 1`.
    """, tree)
    assert got == [
        "source/ch.md:16: unknown option --gpu-mem-util of `vllm serve` — closest: --gpu-memory-utilization",
        "source/ch.md:19: VLLM_USE_V1 is not an environment variable of the tree — closest: VLLM_USE_V2_MODEL_RUNNER",
    ]


def test_unknown_module_and_missing_spec(tmp_path, tree):
    got = check(tmp_path, """
        # T

        ```bash
        python -m vllm.entrypoints.openai.api_servr --model m
        python -m vllm.entrypoints.openai.api_server --model m
        ```
    """, tree)
    assert got == ["source/ch.md:4: no module vllm.entrypoints.openai.api_servr in the tree "
                   "(python -m vllm.entrypoints.openai.api_servr) — closest: vllm.entrypoints.openai.api_server"]
    got = check(tmp_path, "# T\n\n```console\n$ vllm serve m --port 1\n```\n", tree, version="9.9.9")
    assert len(got) == 1 and got[0].startswith("source/ch.md:4: 1 vLLM command lines were not checked: no CLI spec for vLLM 9.9.9")


# ---------------------------------------------------------------------------- variables and metrics


def test_environment_variables(tmp_path, tree):
    got = check(tmp_path, """
        # T

        `VLLM_LOGGING_LEVEL=DEBUG`, `VLLM_CPU_CI_ENV` (read in platforms/cpu.py), the enum member
        `CompilationMode.VLLM_COMPILE`, the CMake variable `VLLM_STABLE_EXT_SRC`, the family `VLLM_USE_*`,
        `envs.VLLM_PORT`: all known.

        Wrong: `VLLM_LOGGING_LEVL`, and VLLM_COMPILE used as a variable:

        ```bash
        VLLM_COMPILE=1 VLLM_ENABLE_V1_MULTIPROCESING=0 python -c "import vllm"
        export VLLM_NOPE_*
        ```
    """, tree)
    assert got == [
        "source/ch.md:7: VLLM_LOGGING_LEVL is not an environment variable of the tree — closest: VLLM_LOGGING_LEVEL",
        "source/ch.md:10: VLLM_COMPILE is not an environment variable of the tree (it is an identifier of the code, "
        "not read from the environment) — closest: VLLM_CPU_CI_ENV",
        "source/ch.md:10: VLLM_ENABLE_V1_MULTIPROCESING is not an environment variable of the tree — closest: "
        "VLLM_ENABLE_V1_MULTIPROCESSING",
        "source/ch.md:11: no environment variable of the tree starts with VLLM_NOPE_ — closest: VLLM_PORT",
    ]


def test_metrics_and_prometheus_suffixes(tmp_path, tree):
    got = check(tmp_path, """
        # T

        Known: `vllm:kv_cache_usage_perc`, `vllm:prefix_cache_hits_total`, `vllm:prefix_cache_hits_created`,
        `vllm:time_to_first_token_seconds_bucket`, `_sum`: `vllm:time_to_first_token_seconds_sum`,
        `vllm:estimated_flops_per_gpu_total`, the family `vllm:prefix_cache_*`.

        ```text
        rate(vllm:prefix_cache_hits_total[5m]) / rate(vllm:prefix_cache_queries_total[5m])
        ```

        Wrong: `vllm:kv_cache_usage_perc_total`, `vllm:prefix_cache_hits_bucket`, vllm:time_to_first_token,
        `vllm:spec_decode` (a prefix the benchmark tests, not a metric).
    """, tree)
    assert got == [
        "source/ch.md:8: vllm:prefix_cache_queries_total is not a metric of the tree — closest: vllm:prefix_cache_hits_total",
        "source/ch.md:11: vllm:kv_cache_usage_perc_total is not exposed: vllm:kv_cache_usage_perc is a gauge, which has "
        "no _total series — closest: vllm:kv_cache_usage_perc",
        "source/ch.md:11: vllm:prefix_cache_hits_bucket is not exposed: vllm:prefix_cache_hits is a counter, which has "
        "no _bucket series — closest: vllm:prefix_cache_hits",
        "source/ch.md:11: vllm:time_to_first_token is not a metric of the tree — closest: vllm:time_to_first_token_seconds",
        "source/ch.md:12: vllm:spec_decode is not a metric of the tree",
    ]


# ---------------------------------------------------------------------------- validate, the real book, the real parser


@needs_ctags
def test_validate_reports_a_wrong_flag_and_variable_in_a_chapter(book, monkeypatch, tmp_path):
    """The fixture book (pinned to 0.1.0) with a spec for it: the gate fails with file:line and the suggestion."""
    data = tmp_path / "data"
    data.mkdir()
    text = SPEC_FILE.read_text(encoding="utf-8").replace(f'"vllm_version": "{PIN.version}"', '"vllm_version": "0.1.0"')
    (data / "vllm-cli-0.1.0.json").write_text(text, encoding="utf-8")
    monkeypatch.setattr(C, "DATA_DIR", data)
    chapters = sorted((book / "source").rglob("*.md"))
    ch = next(p for p in chapters if p.name != "index.md" and "01-" in p.name)
    with ch.open("a", encoding="utf-8") as f:
        f.write("\n```console\n$ vllm serve m --gpu-mem-util 0.9\n```\n")
    n = len(ch.read_text(encoding="utf-8").splitlines()) - 1
    res = validate.run(book, diagrams=False)
    got = [p.format() for p in res.problems if p.check == "commands"]
    rel = ch.relative_to(book).as_posix()
    assert got == [f"{rel}:{n}: unknown option --gpu-mem-util of `vllm serve` — closest: --gpu-memory-utilization\n"
                   f"    fix: use --gpu-memory-utilization (vLLM 0.1.0 parser: {data / 'vllm-cli-0.1.0.json'}); "
                   "an intentional counter-example: mark it {.no-cmd-check} or # vllm-book: no-check"]


@pytest.mark.integration
def test_the_real_book_passes_and_is_checked():
    try:
        tree = pin_mod.source_root(REPO)
    except pin_mod.ProvisionError:
        pytest.skip("vllm/ is not provisioned (make vllm)")
    pages = mdscan.scan_book(REPO / "source")
    problems, stats = C.check_pages(REPO, pages, tree, PIN.version)
    assert [p.format() for p in problems] == []
    assert stats["commands"] >= 50 and stats["inline_options"] >= 100
    assert stats["variables"] >= 25 and stats["metrics"] >= 20


VLLM_PY = REPO / ".venv-vllm" / "bin" / "python"


def test_committed_spec_matches_the_pinned_parser():
    """The JSON validate reads is what the pinned release's parsers say (tools/dump_vllm_cli.py, ~15 s)."""
    if not VLLM_PY.exists():
        msg = f"{VLLM_PY.relative_to(REPO)} is absent: make .venv-vllm/.installed (pip install vllm=={PIN.version}, 7 GB)"
        if os.environ.get("CI") == "true":
            pytest.fail(msg + " — CI must install it (see .ci/run)")
        pytest.skip(msg)
    out = subprocess.run([str(VLLM_PY), str(REPO / "tools" / "dump_vllm_cli.py"), "--pin", str(REPO / "vllm-pin.toml"),
                          "--stdout"], capture_output=True, text=True, timeout=600, cwd=REPO,
                         env={**os.environ, "PYTHONHASHSEED": "random"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout == SPEC_FILE.read_text(encoding="utf-8"), "stale CLI spec: run make cli-spec and commit it"


def test_refresh_target_regenerates_the_spec():
    mk = (REPO / "Makefile").read_text(encoding="utf-8")
    refresh = mk.split("\nrefresh:", 1)[1].split("\n\n", 1)[0]
    assert "$(MAKE) cli-spec" in refresh
    assert "cli-spec: $(VLLM_VENV)/.installed" in mk and "VLLM_VENV    := .venv-vllm" in mk


def test_bare_options_in_prose(tmp_path, tree):
    got = check(tmp_path, """
        # 用 --block-size 与 --gpu-mem-util

        A table | --enforce-eager | cell, a path a/--not-an-option, and [--gpu-mem-util]{.no-cmd-check}.
    """, tree)
    assert got == ["source/ch.md:1: unknown option --gpu-mem-util of any vllm command — closest: --gpu-memory-utilization"]


def test_prompts_in_bash_blocks_and_here_documents(tmp_path, tree):
    got = check(tmp_path, """
        # T

        ```bash
        $ vllm serve m --gpu-mem-util 0.9
        cat > cfg.yaml <<'EOF'
        vllm serve is only text here --nope
        EOF
        (venv) $ vllm serve m --max-num-seqs 1
        ```

        ```console
        user@host:~/vllm$ vllm serve m --nope
        vllm serve m --output-line-is-not-parsed
        ```
    """, tree)
    assert got == [
        "source/ch.md:4: unknown option --gpu-mem-util of `vllm serve` — closest: --gpu-memory-utilization",
        "source/ch.md:12: unknown option --nope of `vllm serve` — closest: --nnodes",
    ]


def test_tree_facts_cache_is_invalidated_by_a_changed_file(tree, tmp_path):
    cache = tmp_path / "cache"
    C.tree_facts.cache_clear()
    first = C.tree_facts(tree, cache)
    assert (cache / "vllm-names.json").is_file()
    C.tree_facts.cache_clear()
    assert C.tree_facts(tree, cache) == first  # read back from the cache
    envs = tree / "vllm" / "envs.py"
    saved = envs.read_text(encoding="utf-8")
    try:
        envs.write_text(saved.replace('"VLLM_PORT": lambda', '"VLLM_PORT2": lambda: 1,\n    "VLLM_PORT": lambda'),
                        encoding="utf-8")
        C.tree_facts.cache_clear()
        assert "VLLM_PORT2" in C.tree_facts(tree, cache).env_vars
    finally:
        envs.write_text(saved, encoding="utf-8")
        C.tree_facts.cache_clear()


def test_directive_titles_and_bodies_carry_the_directive_classes(tmp_path, tree):
    got = check(tmp_path, """
        # T

        ```{admonition} 没有 VLLM_ATTENTION_BACKEND 了
        :class: warning
        正文 `VLLM_ATTENTION_BACKEND=FLASHINFER`。
        ```

        :::{admonition} 没有 VLLM_ATTENTION_BACKEND 了
        :class: warning no-cmd-check
        正文 `VLLM_ATTENTION_BACKEND=FLASHINFER` 与 `--gpu-mem-util`。
        :::
    """, tree)
    assert got == [
        "source/ch.md:3: VLLM_ATTENTION_BACKEND is not an environment variable of the tree",
        "source/ch.md:5: VLLM_ATTENTION_BACKEND is not an environment variable of the tree",
    ]
