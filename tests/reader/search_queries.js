// Types every query of the query set into the real search page of a served book, in headless Chromium,
// and reports the result list as the reader sees it.
// Usage: node search_queries.js <base URL> <queries.json>   (queries.json: [{q, expect}, ...])
// Prints one JSON object: {results: [{q, top: [docname, ...], ms}], errors: [...], tokens: {...}}.
const fs = require("fs");
const {launch, docnameOf, NAV_TIMEOUT_MS} = require("./reader_lib.js");

(async () => {
  const [base, file] = process.argv.slice(2);
  const queries = JSON.parse(fs.readFileSync(file, "utf-8"));
  const browser = await launch();
  const page = await browser.newPage();
  page.setDefaultNavigationTimeout(NAV_TIMEOUT_MS);
  const errors = [];
  page.on("pageerror", (e) => errors.push(`pageerror: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
  page.on("requestfailed", (r) => errors.push(`requestfailed: ${r.url()} ${r.failure() && r.failure().errorText}`));
  const results = [];
  for (const {q} of queries) {
    const t0 = Date.now();
    await page.goto(`${base}/search.html?q=${encodeURIComponent(q)}`, {waitUntil: "load"});
    // finished when Sphinx writes its summary line, or once three results are shown
    await page.waitForFunction(() => {
      const items = document.querySelectorAll("#search-results ul.search > li");
      const status = document.querySelector("#search-results .search-summary");
      return items.length >= 3 || (status && status.textContent.trim().length > 0);
    }, {timeout: 15000});
    const top = await page.evaluate(() => Array.from(document.querySelectorAll("#search-results ul.search > li > a"))
      .slice(0, 5).map((a) => a.href));
    results.push({q, top: top.map((u) => docnameOf(base, u)), ms: Date.now() - t0});
  }
  // the query side cuts Latin text as the index does: hand back its tokens for the Python side to compare
  const samples = JSON.parse(process.env.TOKEN_SAMPLES || "[]");
  const tokens = await page.evaluate((s) => Object.fromEntries(s.map((t) => [t, BookSearch.tokenize(t)])), samples);
  await browser.close();
  console.log(JSON.stringify({results, errors, tokens}));
})().catch((e) => { console.error(e); process.exit(1); });
