#!/usr/bin/env bash
# Print the path of a headless browser for the EPUB/PDF diagrams (export it as PUPPETEER_EXECUTABLE_PATH).
#
#   1. $PUPPETEER_EXECUTABLE_PATH, if set and it starts;
#   2. Debian's `chromium` (our CI and dev machines: the only browser we use there), if it starts;
#   3. otherwise — Ubuntu, i.e. Read the Docs, where apt's `chromium` is a snap shim that cannot run in a
#      build container — the chrome-headless-shell build that our pinned puppeteer-core names
#      (node_modules/puppeteer-core/.../revisions.js), fetched once into _build/browsers with
#      @puppeteer/browsers (installed with mermaid-cli by `make node-tools`).
# Decision and risk: docs/decisions.md ("Browser on Read the Docs").
set -euo pipefail
cd "$(dirname "$0")/.."

starts() {  # does this browser run headless here?
  timeout 60 "$1" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --dump-dom about:blank \
    >/dev/null 2>&1
}

if [[ -n "${PUPPETEER_EXECUTABLE_PATH:-}" ]] && starts "$PUPPETEER_EXECUTABLE_PATH"; then
  echo "$PUPPETEER_EXECUTABLE_PATH"; exit 0
fi
if command -v chromium >/dev/null && starts "$(command -v chromium)"; then
  command -v chromium; exit 0
fi
if [[ ! -d node_modules/@puppeteer/browsers ]]; then
  echo "error: no working chromium, and node_modules/@puppeteer/browsers is missing. Fix: make node-tools" >&2
  exit 2
fi
build=$(node -p "require('./node_modules/puppeteer-core/lib/cjs/puppeteer/revisions.js').PUPPETEER_REVISIONS['chrome-headless-shell']")
echo "[vllm-book] no working chromium here; fetching chrome-headless-shell $build (puppeteer's pin) into _build/browsers" >&2
node node_modules/@puppeteer/browsers/lib/cjs/main-cli.js install "chrome-headless-shell@$build" \
  --path "$PWD/_build/browsers" >&2
exe=$(node -p "require('./node_modules/@puppeteer/browsers').computeExecutablePath({browser: 'chrome-headless-shell', buildId: '$build', cacheDir: '$PWD/_build/browsers'})")
if ! starts "$exe"; then
  echo "error: $exe does not start (missing system libraries?). Run it by hand to see which." >&2
  exit 2
fi
echo "$exe"
