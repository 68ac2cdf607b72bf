// Shared by the reader tests: Debian's chromium through puppeteer (never a downloaded browser).
const puppeteer = require("puppeteer");

const launch = () => puppeteer.launch({
  headless: "new",
  executablePath: process.env.PUPPETEER_EXECUTABLE_PATH,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});

// http://127.0.0.1:port/02-core-concepts/04-prefix-caching.html#x -> 02-core-concepts/04-prefix-caching
const docnameOf = (base, url) => url.replace(base + "/", "").replace(/[?#].*$/, "").replace(/\.html$/, "");

// a loaded 2-core machine can take longer than puppeteer's default 30 s for a page with many diagrams
const NAV_TIMEOUT_MS = 120000;

module.exports = {launch, docnameOf, NAV_TIMEOUT_MS};
