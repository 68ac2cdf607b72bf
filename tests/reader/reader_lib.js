// Shared by the reader tests: Debian's chromium through puppeteer (never a downloaded browser).
const puppeteer = require("puppeteer");

const launch = () => puppeteer.launch({
  headless: "new",
  executablePath: process.env.PUPPETEER_EXECUTABLE_PATH,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});

// http://127.0.0.1:port/02-core-concepts/04-prefix-caching.html#x -> 02-core-concepts/04-prefix-caching
const docnameOf = (base, url) => url.replace(base + "/", "").replace(/[?#].*$/, "").replace(/\.html$/, "");

module.exports = {launch, docnameOf};
