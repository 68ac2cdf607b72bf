"""The pages of the browser that are rendered every time: the parts not per file.

:class:`AuxPages` is a mixin of :class:`~.build.BrowserBuild`: the directory
pages (one per directory, with subtree totals and citation counts), the
landing page's introduction (pin, provenance, most cited files), the symbol
search index (``_static/symbols.js``), and the pieces every page shares — the
stylesheet, the ``<head>`` fields, the breadcrumbs, the GitHub links and the
source sizes.  :func:`iter_pages` lists the browser's pages in an outdir.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import urls
from .highlight import attr, esc, style_css
from vllm_book.fsutil import write_atomic

from .pages import KIND_CODE, STATIC, human_size, page, symbol_targets


def _counts(fi: Any) -> tuple[int, int]:
    """(symbols, refs) of a FileIndex without materialising a lazy one."""
    raw = getattr(fi, "raw", None)
    if raw is not None:
        syms, refs = raw()
        return len(syms), len(refs)
    return len(fi.symbols), len(fi.refs)


class AuxPages:
    """Mixin of :class:`~.build.BrowserBuild`: directory pages, landing page, search index, shared page parts."""

    def _sizes(self) -> dict[str, int]:
        root = Path(self.index.root)
        out = {}
        for path in self.index.files:
            try:
                out[path] = (root / path).stat().st_size
            except OSError:
                out[path] = 0
        return out

    # -- static
    def _css(self) -> str:
        base = (STATIC / "browser.css").read_text(encoding="utf-8")
        light, lbg, lfg = style_css(self.light_style, ".code", ("default",))
        dark, dbg, dfg = style_css(self.dark_style, "html[data-theme=dark] .code", ("monokai",), complete=True)
        auto, _, _ = style_css(self.dark_style, "html:not([data-theme=light]) .code", ("monokai",), complete=True)
        return (
            f"{base}\n/* Pygments: {self.light_style} (light), {self.dark_style} (dark) */\n"
            f":root{{--code-bg:{lbg or '#fff'};--code-fg:{lfg or '#1f2328'}}}\n"
            f"html[data-theme=dark]{{--code-bg:{dbg or '#1e1e1e'};--code-fg:{dfg or '#e6e6e6'}}}\n"
            f"{light}\n{dark}\n"
            f"@media (prefers-color-scheme: dark){{html:not([data-theme=light]){{--code-bg:{dbg or '#1e1e1e'};"
            f"--code-fg:{dfg or '#e6e6e6'}}}\n{auto}\n}}\n"
        )

    # -- shared head
    def head(self, page_rel: str, title: str, crumbs: str) -> dict[str, str]:
        static = self.rel(page_rel, f"{self.prefix}/_static/b.css")[: -len("b.css")]
        home = self.up(page_rel) + self.url(self.home_uri) if self.home_uri else self.up(page_rel) or "./"
        return {
            "title": esc(title),
            "css": attr(f"{static}b.css?v={self.asset_ver}"),
            "js": attr(f"{static}b.js?v={self.asset_ver}"),
            "home": attr(home),
            "project": esc(self.project),
            "base": attr(self.rel(page_rel, f"{self.prefix}/index.html")[: -len("index.html")] or "./"),
            "crumbs": crumbs,
            "icon": (f"<link rel=icon href={attr(self.icon_uri if '://' in self.icon_uri else self.rel(page_rel, self.icon_uri))}>"
                     if self.icon_uri else ""),
        }

    def crumbs(self, page_rel: str, path: str, is_dir: bool) -> str:
        parts = [p for p in path.strip("/").split("/") if p]
        out = [f"<a href={attr(self.rel(page_rel, urls.dir_page(self.prefix, '')))}>源码</a>"]
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if last:
                out.append(f"<b>{esc(part)}{'/' if is_dir else ''}</b>")
            else:
                d = "/".join(parts[: i + 1])
                out.append(f"<a href={attr(self.url(self.rel(page_rel, urls.dir_page(self.prefix, d))))}>{esc(part)}</a>")
        return "/".join(out)

    def github(self, path: str, is_dir: bool = False) -> str:
        if self.pin is None:
            return ""
        if is_dir:
            return f"{self.pin.repository}/tree/{self.pin.commit}/{self.url(path)}"
        return self.pin.github_blob(self.url(path))


    # -- directory pages, landing page, search index
    def _render_aux(self, sizes: dict[str, int], stats: Counter, new_aux: dict, old_aux: dict) -> None:
        idx = self.index
        dirs = idx.dirs()
        # subtree totals
        tot: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # files, lines, bytes
        for path, fi in idx.files.items():
            parts = path.split("/")
            for i in range(len(parts)):
                t = tot["/".join(parts[:i])]
                t[0] += 1
                t[1] += fi.n_lines
                t[2] += sizes.get(path, 0)
        cited_files: Counter = Counter({p: len(v) for p, v in self.cites_by_path.items() if p in idx.files})
        cited_dirs: Counter = Counter()
        for p, n in cited_files.items():
            parts = p.split("/")
            for i in range(len(parts)):
                cited_dirs["/".join(parts[:i])] += n
        for d, children in dirs.items():
            rel = urls.dir_page(self.prefix, d)
            html = self._dir_page(d, children, tot, cited_files, cited_dirs, rel)
            self._write_aux(rel, html.encode("utf-8"), old_aux, new_aux, stats)
        rel = f"{self.prefix}/_static/symbols.js"
        key = f"key:{self.sym_ver}"
        if old_aux.get(rel) == key and (self.outdir / rel).is_file():
            new_aux[rel] = key  # unchanged index: skip building 66k entries
        else:
            sym = self._symbols_js()
            write_atomic(self.outdir / rel, sym)
            new_aux[rel] = key
            stats["aux_written"] += 1

    def _dir_page(self, d: str, children: list[str], tot, cited_files: Counter, cited_dirs: Counter, rel: str) -> str:
        rows = []
        for child in children:
            is_dir = child.endswith("/")
            cpath = f"{d}/{child}".strip("/") if d else child.strip("/")
            if is_dir:
                href = self.url(self.rel(rel, urls.dir_page(self.prefix, cpath)))
                f, lines, size = tot[cpath]
                info = f"{f:,} 个文件"
                n_cited = cited_dirs.get(cpath, 0)
            else:
                href = self.url(self.rel(rel, urls.file_page(self.prefix, cpath)))
                fi = self.index.files[cpath]
                lines, size = fi.n_lines, tot[cpath][2]
                info = {"python": "Python", "cpp": "C/C++"}.get(fi.lang, "文本")
                n_cited = cited_files.get(cpath, 0)
            cite = f"<span class=nc title=被本书引用的次数>引 {n_cited}</span>" if n_cited else ""
            rows.append(
                f"<tr class={'d' if is_dir else 'f'}><td><a href={attr(href)}>{esc(child)}</a>{cite}"
                f"<td>{info}<td class=r>{lines:,}<td class=r>{human_size(size)}</tr>"
            )
        f, lines, size = tot[d]
        title_path = (d + "/") if d else "/"
        label = f"vLLM {self.pin.version}" if self.pin else "vLLM"
        gh = self.github(d, is_dir=True) if d else (f"{self.pin.repository}/tree/{self.pin.commit}" if self.pin else "")
        gh_html = f"<a class=gh href={attr(gh)}>GitHub @ {esc(self.pin.short)}</a>" if gh and self.pin else ""
        intro = self._landing_intro(rel, tot, cited_files) if not d else ""
        if d and d in self.cites_by_path and d not in self.index.files:
            intro += self._citations_for(d, rel, is_dir=True)[1]
        body = (
            "<main class=dir>"
            f"<div class=meta><h1>{esc(title_path)}</h1><span>{f:,} 个文件 · {lines:,} 行 · {human_size(size)}</span>{gh_html}</div>"
            f"{intro}"
            "<table class=ls><thead><tr><th>名称<th>类型<th class=r>行数<th class=r>大小</thead><tbody>"
            + "".join(rows)
            + "</tbody></table></main>"
        )
        title = f"{title_path} · {label} 源码" if d else f"{label} 源码浏览"
        return page(**self.head(rel, title, self.crumbs(rel, d, True)), kind="dir", n="0", body=body)

    def _landing_intro(self, rel: str, tot, cited_files: Counter) -> str:
        idx = self.index
        parts = ["<section class=intro>"]
        if self.pin is not None:
            commit_url = f"{self.pin.repository}/commit/{self.pin.commit}"
            parts.append(
                f"<p>本书对应 <b>vLLM {esc(self.pin.version)}</b>，钉住的提交 "
                f"<a href={attr(commit_url)}><code>{esc(self.pin.commit)}</code></a>。"
                f"这里的每个文件都可以按行（<code>#L120</code>、<code>#L120-L140</code>）或按符号（<code>#Scheduler.schedule</code>）链接。</p>"
            )
        if self.provenance:
            parts.append(f"<p class=prov>来源：{esc(self.provenance)}</p>")
        counts = [_counts(f) for f in idx.files.values()]
        n_sym = sum(c[0] for c in counts)
        n_ref = sum(c[1] for c in counts)
        parts.append(f"<p class=prov>索引：{len(idx.files):,} 个文件、{n_sym:,} 个符号、{n_ref:,} 处交叉引用。</p>")
        tops = [d for d in idx.dirs().get("", []) if d.endswith("/")]
        if tops:
            links = "、".join(
                f"<a href={attr(self.url(self.rel(rel, urls.dir_page(self.prefix, t.strip('/')))))}><code>{esc(t)}</code></a>"
                f"（{tot[t.strip('/')][0]:,} 个文件）" for t in tops
            )
            parts.append(f"<p>顶层目录：{links}</p>")
        if cited_files:
            items = []
            for path, n in sorted(cited_files.items(), key=lambda kv: (-kv[1], kv[0]))[:30]:
                chapters = sorted({c.title for c in self.cites_by_path[path]})
                href = attr(self.url(self.rel(rel, urls.file_page(self.prefix, path))) + "#cites")
                items.append(f"<li><a href={href}><code>{esc(path)}</code></a> <span class=nc>引 {n}</span> "
                             f"<small>{esc('、'.join(chapters[:4]) + ('…' if len(chapters) > 4 else ''))}</small></li>")
            parts.append(f"<h2>本书引用最多的文件</h2><ol class=most>{''.join(items)}</ol>")
        parts.append("<h2>全部文件</h2></section>")
        return "".join(parts)

    def _symbols_js(self) -> bytes:
        """The symbol search index, ``__vbSym({"v": 2, "f": [path…], "s": [[entry…] per file]})``.

        An entry is ``<kind code><n><rest>``: the qualname is the first *n*
        (base 36) dot-separated segments of the previous entry's qualname in
        the same file followed by *rest* (``mScheduler.schedule`` after
        ``cScheduler`` is ``m1schedule``).  Links go to ``<path>.html#<qualname>``.
        """
        files = sorted(self.index.files)
        syms = []
        for path in files:
            row: list[str] = []
            prev: list[str] = []
            for t in symbol_targets(self.index.files[path].symbols):
                if t.id != t.qualname:
                    continue
                parts = t.qualname.split(".")
                n = 0
                while n < len(prev) and n < len(parts) - 1 and n < 35 and prev[n] == parts[n]:
                    n += 1
                row.append(KIND_CODE.get(t.kind, "x") + _B36[n] + ".".join(parts[n:]))
                prev = parts
            syms.append(row)
        data = json.dumps({"v": 2, "f": files, "s": syms}, ensure_ascii=False, separators=(",", ":"))
        # a .js file, never inline — but keep it inert anyway
        data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        return f"__vbSym({data});\n".encode("utf-8")


_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def iter_pages(outdir: Path, prefix: str = "_src") -> Iterable[Path]:
    """Every HTML page of the browser under *outdir* (bench, tests)."""
    return sorted((Path(outdir) / prefix).rglob("*.html"))
