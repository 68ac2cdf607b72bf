// The built HTML book as a reader meets it, in headless Debian chromium over loopback HTTP.
// Usage: node reader_check.js <base URL> <plan.json>
//   plan.json: {pages: [...], sources: [...], axe: [...], narrow: [...]}  (paths relative to the base)
// Prints one JSON object; tests/reader/test_reader.py asserts on it.
const fs = require("fs");
const path = require("path");
const {launch, NAV_TIMEOUT_MS} = require("./reader_lib.js");

const AXE = fs.readFileSync(path.join(process.env.NODE_PATH, "axe-core", "axe.min.js"), "utf-8");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A page that records every error, console error and failed or non-2xx request it sees. */
async function watched(browser, problems) {
  const page = await browser.newPage();
  page.setDefaultNavigationTimeout(NAV_TIMEOUT_MS);
  page.setDefaultTimeout(NAV_TIMEOUT_MS);
  const where = () => page.url();
  page.on("pageerror", (e) => problems.push(`${where()}: pageerror: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") problems.push(`${where()}: console: ${m.text()}`); });
  page.on("requestfailed", (r) => {
    const err = r.failure() && r.failure().errorText;
    if (err !== "net::ERR_ABORTED") problems.push(`${where()}: requestfailed: ${r.url()} ${err}`);
  });
  page.on("response", (r) => { if (r.status() >= 400) problems.push(`${where()}: HTTP ${r.status()}: ${r.url()}`); });
  return page;
}

(async () => {
  const [base, planFile] = process.argv.slice(2);
  const plan = JSON.parse(fs.readFileSync(planFile, "utf-8"));
  const browser = await launch();
  const out = {problems: [], diagrams: [], math: [], narrow: [], axe: {}, checks: {}};
  const page = await watched(browser, out.problems);
  await page.setViewport({width: 1280, height: 900});

  // 1. every chapter page (and the front pages): loads clean; its diagrams become SVG; its math renders
  for (const p of plan.pages) {
    await page.goto(`${base}/${p}`, {waitUntil: "networkidle0"});
    const state = await page.waitForFunction(() => {
      const d = [...document.querySelectorAll("pre.mermaid, div.mermaid")];
      const m = [...document.querySelectorAll("span.math, div.math")];
      const done = d.every((el) => el.querySelector("svg")) && m.every((el) => el.querySelector("mjx-container"));
      return done && {diagrams: d.length, math: m.length};
    }, {timeout: 30000, polling: 200}).then((h) => h.jsonValue()).catch(() => null);
    const info = await page.evaluate(() => {
      const d = [...document.querySelectorAll("pre.mermaid, div.mermaid")];
      return {
        diagrams: d.length,
        svg: d.filter((el) => el.querySelector("svg")).length,
        // mermaid draws a bomb icon and "Syntax error in text" instead of the diagram when it cannot parse
        errors: d.filter((el) => /Syntax error|Parse error/.test(el.textContent) ||
                                 el.querySelector("svg[aria-roledescription=error]")).length,
        math: document.querySelectorAll("span.math, div.math").length,
        mathDone: document.querySelectorAll("mjx-container").length,
        mathErrors: document.querySelectorAll("mjx-merror").length,
      };
    });
    out.diagrams.push({page: p, ok: !!state, ...info});
  }

  // 2. sampled source-browser pages: load clean
  for (const p of plan.sources) await page.goto(`${base}/${p}`, {waitUntil: "load"});
  out.checks.sourcesVisited = plan.sources.length;

  // 3. a {src} link opens the browser page with its lines highlighted and scrolled into view
  await page.goto(`${base}/${plan.srcLinkPage}`, {waitUntil: "load"});
  const href = await page.$eval("a.src-ref[href*='#L']", (a) => a.getAttribute("href"));
  await Promise.all([page.waitForNavigation({waitUntil: "load"}), page.click(`a.src-ref[href='${href}']`)]);
  await sleep(300);
  out.checks.srcLink = await page.evaluate((href) => {
    const box = document.querySelector(".hl");
    const m = /#L(\d+)(?:-L(\d+))?$/.exec(href);
    const r = box && !box.hidden ? box.getBoundingClientRect() : null;
    return {href, url: location.href, hash: location.hash, want: m && [+m[1], +(m[2] || m[1])],
            highlighted: !!r && r.height > 0, inView: !!r && r.top >= 0 && r.top < window.innerHeight};
  }, href);

  // 4. the source browser's symbol search finds Scheduler.schedule
  await page.goto(`${base}/_src/vllm/v1/core/sched/scheduler.py.html`, {waitUntil: "load"});
  await page.keyboard.press("/");
  await page.keyboard.type("Scheduler.schedule");
  await page.waitForFunction(() => document.querySelectorAll("#qr li[role=option] a").length > 0, {timeout: 10000})
    .catch(() => null);
  out.checks.symbolSearch = await page.evaluate(() => Array.from(document.querySelectorAll("#qr li[role=option] a"))
    .slice(0, 5).map((a) => [a.textContent, a.getAttribute("href")]));

  // 5. backlinks (被本书引用): clicking one lands on an element that exists on the chapter page
  const backlinks = await page.evaluate(() => Array.from(document.querySelectorAll("a[href*='.html#src-']"))
    .slice(0, 3).map((a) => a.href));
  out.checks.backlinks = [];
  for (const url of backlinks) {
    await page.goto(url, {waitUntil: "load"});
    out.checks.backlinks.push(await page.evaluate(() => {
      const el = document.getElementById(location.hash.slice(1));
      return {url: location.href, exists: !!el, inView: !!el && el.getBoundingClientRect().top < window.innerHeight};
    }));
  }

  // 6. the dark-mode toggle works, and the choice holds on the next page (and in the source browser)
  await page.goto(`${base}/${plan.pages[0]}`, {waitUntil: "load"});
  await page.click(".theme-switch-button");
  await page.click(".theme-change-button[data-mode=dark]");
  await sleep(200);
  const afterToggle = await page.evaluate(() => document.documentElement.dataset.theme);
  await page.goto(`${base}/${plan.pages[1]}`, {waitUntil: "load"});
  const nextPage = await page.evaluate(() => [document.documentElement.dataset.theme,
    getComputedStyle(document.body).backgroundColor]);
  await page.goto(`${base}/${plan.sources[0]}`, {waitUntil: "load"});
  const sourcePage = await page.evaluate(() => document.documentElement.dataset.theme);
  out.checks.darkMode = {afterToggle, nextPage, sourcePage};
  await page.evaluate(() => { localStorage.clear(); });

  // 7. the copy button copies the command without its "$ " prompt or line numbers
  const ctx = browser.defaultBrowserContext();
  await ctx.overridePermissions(base, ["clipboard-read", "clipboard-write", "clipboard-sanitized-write"]);
  await page.goto(`${base}/${plan.copyPage}`, {waitUntil: "load"});
  const block = await page.evaluate(() => {
    const pre = [...document.querySelectorAll("div.highlight pre")].find((p) => p.querySelector(".gp"));
    if (!pre) return null;
    pre.scrollIntoView();
    pre.parentElement.id = "copy-probe";
    return pre.textContent;
  });
  let copied = null;
  if (block) {
    await page.hover("#copy-probe");
    await page.click("#copy-probe .copybtn");
    await sleep(300);
    copied = await page.evaluate(() => navigator.clipboard.readText());
  }
  out.checks.copy = {block, copied};
  const lined = await page.goto(`${base}/${plan.srcCodePage}`, {waitUntil: "load"}).then(() => page.evaluate(() => {
    const div = [...document.querySelectorAll("div.highlight")].find((d) => d.querySelector(".linenos"));
    if (!div) return null;
    div.id = "copy-lined";
    div.scrollIntoView();
    return div.querySelector("pre").textContent;
  }));
  let copiedLined = null;
  if (lined) {
    await page.hover("#copy-lined");
    await page.click("#copy-lined .copybtn");
    await sleep(300);
    copiedLined = await page.evaluate(() => navigator.clipboard.readText());
  }
  out.checks.copyLined = {block: lined, copied: copiedLined};

  // 8. at a 390 px viewport no page scrolls sideways
  await page.setViewport({width: 390, height: 844, isMobile: true, hasTouch: true});
  for (const p of plan.narrow) {
    await page.goto(`${base}/${p}`, {waitUntil: "load"});
    await sleep(50);
    const w = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    out.narrow.push({page: p, scrollWidth: w[0], innerWidth: w[1]});
  }

  // 9. axe-core: violations by impact on the pages a reader meets first
  await page.setViewport({width: 1280, height: 900});
  for (const p of plan.axe) {
    await page.goto(`${base}/${p}`, {waitUntil: "networkidle0"});
    await sleep(300);
    await page.evaluate(AXE);
    const res = await page.evaluate(async () => {
      const r = await axe.run(document, {resultTypes: ["violations"]});
      return r.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.length,
                                       targets: v.nodes.slice(0, 3).map((n) => n.target.join(" "))}));
    });
    out.axe[p] = res;
  }
  await browser.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
