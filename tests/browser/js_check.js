// Drives b.js in headless Chromium (puppeteer) over a built test-browser-basic tree.
// Usage: node js_check.js <outdir>/_src ; prints one JSON object with what it saw.
// Run by test_browser_js.py when node, puppeteer and chromium are available.
const path = require("path");
const puppeteer = require("puppeteer");

(async () => {
  const src = process.argv[2];
  const url = (p) => "file://" + path.join(src, p);
  const browser = await puppeteer.launch({
    headless: "new",
    executablePath: process.env.PUPPETEER_EXECUTABLE_PATH || undefined,
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const out = {errors: [], requests: []};
  const page = await browser.newPage();
  page.on("pageerror", (e) => out.errors.push(e.message));
  page.on("request", (r) => out.requests.push(r.url()));
  await page.setViewport({width: 1300, height: 700});
  await page.emulateMediaFeatures([{name: "prefers-color-scheme", value: "light"}]);
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  // which lines the highlight box covers, measured against the gutter's line boxes
  const state = () => page.evaluate(() => {
    const box = document.querySelector(".hl"), g = document.querySelector(".ln");
    let lines = null;
    if (box && !box.hidden) {
      const r = box.getBoundingClientRect(), gr = g.getBoundingClientRect();
      const pad = parseFloat(getComputedStyle(g).paddingTop), n = g.textContent.split("\n").length;
      const lh = (g.clientHeight - pad - parseFloat(getComputedStyle(g).paddingBottom)) / n;
      lines = [Math.round((r.top - gr.top - pad) / lh) + 1, Math.round((r.bottom - gr.top - pad) / lh)];
    }
    return {hash: location.hash, lines, gh: (document.getElementById("gh") || {}).href || "",
            theme: document.documentElement.dataset.theme, gutter: g ? g.textContent.split("\n").length : 0,
            scrollY: window.scrollY};
  });

  await page.goto(url("vllm/v1/core/sched/scheduler.py.html#L24-L28"), {waitUntil: "load"});
  out.range = await state();
  await page.evaluate(() => { location.hash = "#Scheduler.budget"; });
  await sleep(150);
  out.symbol = await state();
  const g = await (await page.$(".ln")).boundingBox();
  await page.evaluate(() => window.scrollTo(0, 0));
  await sleep(50);
  const g2 = await (await page.$(".ln")).boundingBox();
  const lineY = (n) => g2.y + 8 + (n - 1) * 20 + 10;
  await page.mouse.click(g2.x + g2.width - 8, lineY(10));
  out.click = await state();
  await page.keyboard.down("Shift");
  await page.mouse.click(g2.x + g2.width - 8, lineY(14));
  await page.keyboard.up("Shift");
  out.shiftClick = await state();
  await page.click("#tm");
  await page.click("#tm");
  out.toggled = await page.evaluate(() => [document.documentElement.dataset.theme, localStorage.getItem("mode"), localStorage.getItem("theme")]);
  await page.click("#tm");  // back to auto

  await page.keyboard.press("/");
  await page.keyboard.type("hash_block");
  await sleep(500);
  out.results = await page.evaluate(() => Array.from(document.querySelectorAll("#qr li[role=option] a")).map((a) => [a.textContent, a.getAttribute("href")]));
  await Promise.all([page.waitForNavigation({waitUntil: "load"}), page.keyboard.press("Enter")]);
  await sleep(150);
  out.afterSearch = Object.assign(await state(), {url: page.url()});

  const dark = await browser.newPage();
  await dark.emulateMediaFeatures([{name: "prefers-color-scheme", value: "dark"}]);
  await dark.goto(url("index.html"), {waitUntil: "load"});
  out.darkTheme = await dark.evaluate(() => [document.documentElement.dataset.theme,
    getComputedStyle(document.body).backgroundColor]);
  await browser.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
