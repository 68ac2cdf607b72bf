// The two editions in a real browser: an English page with an incomplete catalog shows the translation
// banner; its "Chinese original" link and the header's language switch land on the same page in the other
// edition; the switch there leads back. Usage: node editions_check.js BASE DOCNAME
// (BASE serves html/ = Chinese edition and en/html/ = English edition, the Makefile's layout).
const {launch, NAV_TIMEOUT_MS} = require("./reader_lib.js");

(async () => {
  const [base, doc] = process.argv.slice(2);
  const browser = await launch();
  const page = await browser.newPage();
  page.setDefaultNavigationTimeout(NAV_TIMEOUT_MS);
  const failed = [];
  page.on("response", (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); });
  const where = () => page.evaluate(() => ({
    path: location.pathname, lang: document.documentElement.lang, title: document.title,
  }));
  const out = {failed};

  await page.goto(`${base}/en/html/${doc}.html`, {waitUntil: "load"});
  out.english = await where();
  out.banner = await page.evaluate(() => {
    const box = document.querySelector(".translation-banner");
    if (!box) return null;
    const link = box.querySelector("a.reference.external");
    const h1 = document.querySelector("article h1, main h1, h1");
    return {text: box.innerText, href: link && link.href,
            afterTitle: !!(h1 && h1.compareDocumentPosition(box) & Node.DOCUMENT_POSITION_FOLLOWING)};
  });
  out.switchEn = await page.evaluate(() => {
    const a = document.querySelector("a.edition-switch");
    return a && {label: a.innerText.trim(), hreflang: a.getAttribute("hreflang"), visible: a.offsetParent !== null};
  });
  out.alternate = await page.evaluate(() => {
    const l = document.querySelector('link[rel="alternate"][hreflang]');
    return l && l.getAttribute("hreflang");
  });

  if (out.banner && out.banner.href) {
    await Promise.all([page.waitForNavigation({waitUntil: "load"}),
                       page.click(".translation-banner a.reference.external")]);
    out.original = await where();
    await page.goBack({waitUntil: "load"});
  }
  if (out.switchEn) {
    await Promise.all([page.waitForNavigation({waitUntil: "load"}), page.click("a.edition-switch")]);
    out.chinese = await where();
    out.switchZh = await page.evaluate(() => {
      const a = document.querySelector("a.edition-switch");
      return a && {label: a.innerText.trim(), hreflang: a.getAttribute("hreflang"), visible: a.offsetParent !== null};
    });
    out.bannerOnChinese = await page.evaluate(() => !!document.querySelector(".translation-banner"));
    if (out.switchZh) {
      await Promise.all([page.waitForNavigation({waitUntil: "load"}), page.click("a.edition-switch")]);
      out.back = await where();
    }
  }
  await page.goto(`${base}/en/html/guide/translation-status.html`, {waitUntil: "load"});
  out.status = await page.evaluate(() => {
    const t = document.querySelector("table.translation-status");
    if (!t) return null;
    return [...t.querySelectorAll("tbody tr")].map((tr) => {
      const cells = [...tr.querySelectorAll("td")].map((td) => td.innerText.trim());
      const a = tr.querySelector("a");
      return {cells, href: a && a.getAttribute("href"), group: tr.classList.contains("translation-group")};
    });
  });
  await browser.close();
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
