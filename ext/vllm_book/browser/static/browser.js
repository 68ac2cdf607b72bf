/* vLLM 学习手册 — source browser.  Loaded (not deferred) in <head> of every
   source page: applies the reader's light/dark choice at once (shared with the
   book through localStorage "mode"/"theme", as pydata-sphinx-theme stores it),
   then, once the DOM is ready, draws the line-number gutter, resolves #L120,
   #L120-L140 and #Qual.name (highlight + scroll, on load and on hashchange),
   and runs the symbol search (index lazy-loaded on first focus). */
(function () {
  "use strict";
  var d = document.documentElement;
  /* this script's ?v= (also the version of symbols.js) */
  var me = document.currentScript, ver = me && /[?&]v=([^&#]*)/.exec(me.src);
  ver = ver ? ver[1] : "";
  var media = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

  function storedMode() {
    try { return localStorage.getItem("mode") || "auto"; } catch (e) { return "auto"; }
  }
  function applyTheme(mode) {
    var dark = mode === "dark" || (mode !== "light" && !!media && media.matches);
    d.setAttribute("data-mode", mode);
    d.setAttribute("data-theme", dark ? "dark" : "light");
    return dark ? "dark" : "light";
  }
  applyTheme(storedMode());
  if (media) {
    var onMedia = function () { if (storedMode() === "auto") applyTheme("auto"); };
    if (media.addEventListener) media.addEventListener("change", onMedia);
    else if (media.addListener) media.addListener(onMedia);
  }

  var body, base, code, src, gutter, box, gh, n = 0, anchorLine = 0;

  /* ---- lines ------------------------------------------------------------ */
  function lineHeight() {
    var cs = getComputedStyle(code);
    var inner = code.clientHeight - (parseFloat(cs.paddingTop) || 0) - (parseFloat(cs.paddingBottom) || 0);
    return n > 0 && inner > 0 ? inner / n : parseFloat(cs.lineHeight) || 20;
  }
  function lineTop(line) {  /* relative to .src */
    return code.offsetTop + (parseFloat(getComputedStyle(code).paddingTop) || 0) + (line - 1) * lineHeight();
  }
  function parseHash() {
    var h = location.hash.slice(1), a = 0, b = 0, m, el;
    try { h = decodeURIComponent(h); } catch (e) { /* keep it raw */ }
    if ((m = /^L(\d+)(?:-L?(\d+))?$/.exec(h))) {
      a = +m[1]; b = m[2] ? +m[2] : a;
    } else if (h && (el = document.getElementById(h)) && el.parentNode === code) {
      /* a symbol anchor: its line from its position, its last line in data-e */
      a = Math.round((el.offsetTop - lineTop(1)) / lineHeight()) + 1;
      b = +el.getAttribute("data-e") || a;
    }
    if (b < a) { var t = a; a = b; b = t; }
    if (!a || !n) return null;
    return [Math.max(1, Math.min(a, n)), Math.max(1, Math.min(b, n))];
  }
  function setGithub(range) {
    if (!gh) return;
    var url = gh.href.replace(/#.*$/, "");
    if (range) url += "#L" + range[0] + (range[1] > range[0] ? "-L" + range[1] : "");
    gh.href = url;
  }
  function highlight(range) {
    if (!box) return;
    if (!range) { box.hidden = true; setGithub(null); return; }
    var lh = lineHeight();
    box.style.top = lineTop(range[0]) + "px";
    box.style.height = (range[1] - range[0] + 1) * lh + "px";
    box.hidden = false;
    setGithub(range);
  }
  function scrollToLine(line) {
    var y = src.getBoundingClientRect().top + window.pageYOffset + lineTop(line);
    var top = parseFloat(getComputedStyle(d).getPropertyValue("--top")) || 46;
    window.scrollTo(0, Math.max(0, y - top - 3 * lineHeight()));
  }
  function onHash(scroll) {
    var range = parseHash();
    highlight(range);
    if (range) {
      anchorLine = range[0];
      if (scroll) scrollToLine(range[0]);
    }
  }
  function initLines() {
    code = document.getElementById("code");
    if (!code) return;
    src = code.parentNode;
    n = +body.getAttribute("data-n") || 0;
    gutter = document.createElement("pre");
    gutter.className = "ln";
    gutter.setAttribute("aria-hidden", "true");
    var nums = new Array(n);
    for (var i = 0; i < n; i++) nums[i] = i + 1;
    gutter.textContent = nums.join("\n");
    src.insertBefore(gutter, code);
    box = document.createElement("div");
    box.className = "hl";
    box.hidden = true;
    src.appendChild(box);
    gh = document.getElementById("gh");
    gutter.addEventListener("click", function (e) {
      var rect = gutter.getBoundingClientRect();
      var pad = parseFloat(getComputedStyle(gutter).paddingTop) || 0;
      var line = Math.floor((e.clientY - rect.top - pad) / lineHeight()) + 1;
      if (line < 1 || line > n) return;
      var h;
      if (e.shiftKey && anchorLine) {
        h = "L" + Math.min(anchorLine, line) + "-L" + Math.max(anchorLine, line);
      } else {
        h = "L" + line;
        anchorLine = line;
      }
      if (history.replaceState) history.replaceState(null, "", "#" + h);
      else location.hash = h;
      onHash(false);
    });
    window.addEventListener("hashchange", function () { onHash(true); });
    window.addEventListener("resize", function () { highlight(parseHash()); });
    onHash(true);
    /* fonts or late layout can move lines: settle once more after load */
    window.addEventListener("load", function () { onHash(!!location.hash && /^#L\d/.test(location.hash)); });
  }

  /* ---- theme toggle ----------------------------------------------------- */
  function initToggle(tools) {
    var btn = document.createElement("button");
    btn.id = "tm";
    btn.type = "button";
    btn.textContent = "◐";
    btn.title = "切换明暗";
    btn.setAttribute("aria-label", "切换明暗");
    tools.appendChild(btn);
    btn.addEventListener("click", function () {
      var cur = storedMode(), next = cur === "auto" ? "light" : cur === "light" ? "dark" : "auto";
      var theme = applyTheme(next);
      try { localStorage.setItem("mode", next); localStorage.setItem("theme", theme); } catch (e) { /* private mode */ }
      btn.title = "切换明暗（当前：" + ({auto: "跟随系统", light: "亮", dark: "暗"})[next] + "）";
    });
  }

  /* ---- symbol search ---------------------------------------------------- */
  var items = null, loading = false, results = [], active = -1, input, list, pending = null;
  var KIND = {c: "类", f: "函数", m: "方法", p: "属性", v: "变量", F: "函数", C: "类", S: "结构", N: "命名空间",
              M: "宏", E: "枚举", T: "类型", P: "声明", V: "变量", U: "联合", file: "文件"};
  var RANK = {c: 0, C: 0, S: 0, f: 1, F: 1, m: 1, p: 2, N: 2, E: 2, U: 2, M: 3, T: 3, file: 3, v: 4, V: 4, P: 5};

  window.__vbSym = function (data) {
    var out = [], f = data.f, s = data.s, i, j, row, e, q, name, prev, parts;
    for (i = 0; i < f.length; i++) {
      name = f[i].slice(f[i].lastIndexOf("/") + 1);
      out.push({k: "file", q: f[i], n: name, lq: f[i].toLowerCase(), ln: name.toLowerCase(), p: f[i]});
      row = s[i] || [];
      prev = [];
      for (j = 0; j < row.length; j++) {
        e = row[j];
        parts = prev.slice(0, parseInt(e.charAt(1), 36)).concat(e.length > 2 ? e.slice(2).split(".") : []);
        prev = parts;
        q = parts.join(".");
        name = parts[parts.length - 1];
        out.push({k: e.charAt(0), q: q, n: name, lq: q.toLowerCase(), ln: name.toLowerCase(), p: f[i]});
      }
    }
    items = out;
    loading = false;
    if (pending !== null) search(pending);
  };
  function load() {
    if (items || loading) return;
    loading = true;
    var s = document.createElement("script");
    s.src = base + "_static/symbols.js?v=" + ver;
    s.onerror = function () { loading = false; message("符号索引加载失败"); };
    document.head.appendChild(s);
  }
  function hrefOf(it) {
    var url = base + encodeURI(it.p).replace(/#/g, "%23").replace(/\?/g, "%3F") + ".html";
    return it.k === "file" ? url : url + "#" + encodeURIComponent(it.q);
  }
  function ensureList() {
    if (!list) {
      list = document.createElement("ul");
      list.id = "qr";
      list.setAttribute("role", "listbox");
      input.parentNode.appendChild(list);
    }
    list.hidden = false;
    while (list.firstChild) list.removeChild(list.firstChild);
  }
  function message(text) {
    ensureList();
    var li = document.createElement("li");
    li.className = "msg";
    li.textContent = text;
    list.appendChild(li);
  }
  function close() { if (list) list.hidden = true; active = -1; }
  function score(it, t) {
    var i;
    if (it.ln === t) return 0;
    if (it.ln.lastIndexOf(t, 0) === 0) return 1;
    if (it.lq.lastIndexOf(t, 0) === 0) return 2;
    if ((i = it.ln.indexOf(t)) >= 0) return 3;
    if ((i = it.lq.indexOf(t)) >= 0) return 4;
    return -1;
  }
  function search(text) {
    var t = text.trim().toLowerCase();
    if (!t) { close(); return; }
    if (!items) { pending = text; message("正在加载符号索引…"); load(); return; }
    pending = null;
    var hits = [], i, sc, it, parts = t.split(/\s+/), head = parts[0], rest = parts.slice(1);
    for (i = 0; i < items.length; i++) {
      it = items[i];
      sc = score(it, head);
      if (sc < 0) continue;
      var ok = true;
      for (var r = 0; r < rest.length; r++) if ((it.lq + " " + it.p.toLowerCase()).indexOf(rest[r]) < 0) { ok = false; break; }
      if (ok) hits.push([sc, RANK[it.k] === undefined ? 3 : RANK[it.k], it.q.length, it]);
    }
    hits.sort(function (x, y) { return x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || (x[3].p < y[3].p ? -1 : 1); });
    results = hits.slice(0, 40).map(function (h) { return h[3]; });
    ensureList();
    active = results.length ? 0 : -1;
    if (!results.length) { message("没有匹配的符号"); return; }
    results.forEach(function (it, k) {
      var li = document.createElement("li"), a = document.createElement("a"), kind = document.createElement("i"),
          small = document.createElement("small");
      li.setAttribute("role", "option");
      if (k === 0) li.className = "on";
      a.href = hrefOf(it);
      kind.textContent = KIND[it.k] || it.k;
      a.appendChild(kind);
      a.appendChild(document.createTextNode(it.q));
      small.textContent = it.k === "file" ? "" : it.p;
      a.appendChild(small);
      li.appendChild(a);
      list.appendChild(li);
    });
    list.appendChild(document.createElement("li")).className = "msg";
    list.lastChild.textContent = hits.length > results.length ? "共 " + hits.length + " 个结果，显示前 " + results.length + " 个" : "共 " + hits.length + " 个结果";
  }
  function move(delta) {
    if (!list || list.hidden || !results.length) return;
    var lis = list.querySelectorAll("li[role=option]");
    if (active >= 0) lis[active].className = "";
    active = (active + delta + results.length) % results.length;
    lis[active].className = "on";
    lis[active].scrollIntoView({block: "nearest"});
  }
  function initSearch(tools) {
    input = document.createElement("input");
    input.id = "q";
    input.type = "search";
    input.placeholder = "搜索符号或文件…（/）";
    input.autocomplete = "off";
    input.spellcheck = false;
    input.setAttribute("aria-label", "搜索符号或文件");
    tools.appendChild(input);
    input.addEventListener("focus", load, {once: true});
    input.addEventListener("input", function () { search(input.value); });
    input.addEventListener("keydown", function (e) {
      if (e.key === "ArrowDown") { move(1); e.preventDefault(); }
      else if (e.key === "ArrowUp") { move(-1); e.preventDefault(); }
      else if (e.key === "Enter" && active >= 0 && results[active]) { location.href = hrefOf(results[active]); close(); }
      else if (e.key === "Escape") { close(); input.blur(); }
    });
    document.addEventListener("click", function (e) { if (list && e.target !== input && !list.contains(e.target)) close(); });
    document.addEventListener("keydown", function (e) {
      if (e.key === "/" && document.activeElement !== input && !e.ctrlKey && !e.metaKey) { input.focus({preventScroll: true}); e.preventDefault(); }
    });
  }

  function init() {
    body = document.body;
    base = body.getAttribute("data-base") || "./";
    initLines();
    var tools = document.querySelector(".tools");
    if (tools) {
      initSearch(tools);
      initToggle(tools);
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
