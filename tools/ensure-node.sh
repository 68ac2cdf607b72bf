#!/usr/bin/env bash
# Make sure the JavaScript tools the build needs are present.
#   tools/ensure-node.sh         node + npm (for the pinned Mermaid JS of the HTML edition)
#   tools/ensure-node.sh --cli   also Debian's chromium, Noto CJK fonts and @mermaid-js/mermaid-cli
#                                (EPUB/PDF diagrams); never downloads a browser.
# As root on Debian/Ubuntu the missing system packages are installed with apt-get;
# otherwise the script says what to install and stops.
set -euo pipefail
cli=0; [[ "${1:-}" == "--cli" ]] && cli=1

need=()
command -v node >/dev/null || need+=(nodejs)
command -v npm  >/dev/null || need+=(npm)
if (( cli )); then
  # a browser: $PUPPETEER_EXECUTABLE_PATH, else Debian's chromium; on Read the Docs (Ubuntu: chromium is a snap
  # shim) tools/headless-browser.sh fetches puppeteer's chrome-headless-shell after this script has run
  [[ -n "${PUPPETEER_EXECUTABLE_PATH:-}" || -n "${READTHEDOCS:-}" ]] || command -v chromium >/dev/null \
    || need+=(chromium)
  # grep reads all of fc-list (not -q): with pipefail, an early exit would SIGPIPE fc-list and fail the test
  fc-list 2>/dev/null | grep -c "Noto Sans CJK" >/dev/null || need+=(fonts-noto-cjk)
fi
if (( ${#need[@]} )); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "[vllm-book] installing ${need[*]} with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "error: the build needs: ${need[*]}" >&2
    echo "  Fix: sudo apt-get install ${need[*]}" >&2
    exit 2
  fi
fi
if (( cli )) && [[ ! -x node_modules/.bin/mmdc ]]; then
  echo "[vllm-book] installing @mermaid-js/mermaid-cli (pinned in package-lock.json; browser = Debian chromium)"
  PUPPETEER_SKIP_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund
fi
