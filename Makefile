# 《vLLM 学习手册》 — the public make interface (target names are stable; tools rely on them).
#
#   make html            build the HTML book (+ source browser) into _build/html
#   make test            run the test suite
#
# Everything else is listed by `make help`.

SHELL        := /bin/bash
PYTHON       ?= python3
VENV         ?= .venv
BUILDDIR     ?= _build
BOOK_LANG    ?= zh_CN
SPHINXOPTS   ?= -j auto -W --keep-going
PYTESTOPTS   ?=
TO           ?=

PY           := $(VENV)/bin/python
SPHINXBUILD  := $(VENV)/bin/sphinx-build
STAMP        := $(VENV)/.installed
MERMAID_JS   := source/_static/mermaid/mermaid.esm.min.mjs
# the manifest: a tree provisioned before manifests existed gets one on the next make (from the cached sdist)
VLLM_STAMP   := vllm/.vllm-book-manifest.json
# the pinned vLLM installed from PyPI (~7 GB) for `make experiments` and `make cli-spec`; html/test/validate never need it
VLLM_VENV    := .venv-vllm
VLLM_VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' vllm-pin.toml | head -n 1)
CLI_SPEC     := ext/vllm_book/data/vllm-cli-$(VLLM_VERSION).json
VLLM_REQS    := experiments/requirements-vllm.txt
BOOK_CACHE   := $(or $(VLLM_BOOK_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/vllm-book)
WHEELHOUSE   := $(BOOK_CACHE)/wheels
EXPERIMENTS_ARGS ?=
ifeq ($(BOOK_LANG),zh_CN)
  OUT        := $(BUILDDIR)
else
  OUT        := $(BUILDDIR)/$(BOOK_LANG)
endif
SPHINXENV    := BOOK_LANG=$(BOOK_LANG)

.DEFAULT_GOAL := help
.PHONY: help html epub pdf test validate impact refresh bench gettext intl-update serve clean new-chapter \
        venv vllm mermaid-js node-tools cli-spec experiments

help: ## list the targets
	@echo "《vLLM 学习手册》 make targets (BOOK_LANG=$(BOOK_LANG)):"
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  make \1\t\2/' | expand -t 24
	@echo "Variables: BOOK_LANG=zh_CN|en  SPHINXOPTS='$(SPHINXOPTS)'  TO=<vLLM release> (impact/refresh)"

# -- setup --------------------------------------------------------------------

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11+ (apt-get install python3 python3-venv)"; exit 2; }
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV) || { echo "error: cannot create $(VENV); install python3-venv"; exit 2; }
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	@touch $@

venv: $(STAMP) ## create .venv from pyproject.toml

vllm: $(STAMP) ## provision vllm/ (submodule, or the sha256-verified PyPI sdist)
	@$(PY) -m vllm_book.pin provision

$(VLLM_STAMP): $(STAMP) vllm-pin.toml
	@$(PY) -m vllm_book.pin provision
	@test ! -f $@ || touch $@

# pip's HTTP cache does not keep these wheels here (the index answers without cache headers), so the
# wheels are downloaded once into $(WHEELHOUSE) (sha256-checked) and installed from there with --no-index.
$(VLLM_VENV)/.installed: $(VLLM_REQS)
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11+"; exit 2; }
	@echo "== make experiments needs vllm==$(VLLM_VERSION) in $(VLLM_VENV): about 7 GB installed (3.6 GB of wheels,"
	@echo "   torch and the CUDA wheels included), about 3-7 minutes on a 2-core machine. The wheels are kept in"
	@echo "   $(WHEELHOUSE) and reused by every later install (a fresh clone, CI on this machine)."
	@test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV) || { echo "error: cannot create $(VLLM_VENV)"; exit 2; }
	@mkdir -p $(WHEELHOUSE)
	set -o pipefail; $(VLLM_VENV)/bin/pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
	  --only-binary :all: -d $(WHEELHOUSE) -r $(VLLM_REQS) 2>&1 | { grep -v 'is ignored: it is neither' || true; }
	set -o pipefail; $(VLLM_VENV)/bin/pip install --quiet --disable-pip-version-check --no-index --find-links $(WHEELHOUSE) \
	  --no-deps --require-hashes -r $(VLLM_REQS) 2>&1 | { grep -v 'is ignored: it is neither' || true; }
	@touch $@

node_modules/mermaid/package.json: package.json package-lock.json
	@bash tools/ensure-node.sh
	@# keep mermaid-cli when it was installed (make epub/pdf); plain HTML needs only the runtime packages
	if [ -x node_modules/.bin/mmdc ]; then PUPPETEER_SKIP_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund; \
	else npm ci --omit=dev --ignore-scripts --no-audit --no-fund; fi
	@touch $@

$(MERMAID_JS): node_modules/mermaid/package.json
	@rm -rf source/_static/mermaid source/_static/mathjax
	mkdir -p source/_static/mermaid/chunks source/_static/mathjax/output/chtml/fonts
	cp node_modules/mermaid/dist/mermaid.esm.min.mjs source/_static/mermaid/
	cp -r node_modules/mermaid/dist/chunks/mermaid.esm.min source/_static/mermaid/chunks/
	cp node_modules/mathjax/es5/tex-mml-chtml.js source/_static/mathjax/
	cp -r node_modules/mathjax/es5/output/chtml/fonts/woff-v2 source/_static/mathjax/output/chtml/fonts/

mermaid-js: $(MERMAID_JS) ## copy the pinned Mermaid and MathJax JS into source/_static (no CDN at read time)

node-tools: ## install mermaid-cli (EPUB/PDF diagrams) with Debian's chromium
	@bash tools/ensure-node.sh --cli

PREREQS := $(STAMP) $(VLLM_STAMP) $(MERMAID_JS)

# -- books --------------------------------------------------------------------

html: $(PREREQS) ## build the HTML book and the source browser into _build/html
	$(SPHINXENV) $(SPHINXBUILD) -M html source $(OUT) -c . $(SPHINXOPTS)
	@echo "open $(OUT)/html/index.html"

epub: $(PREREQS) node-tools ## build the EPUB into _build/epub
	$(SPHINXENV) $(SPHINXBUILD) -M epub source $(OUT) -c . $(SPHINXOPTS)

pdf: $(PREREQS) node-tools ## build the PDF (rinohtype) into _build/pdf
	$(SPHINXENV) $(SPHINXBUILD) -b rinoh source $(OUT)/pdf -d $(OUT)/doctrees-rinoh -c . $(SPHINXOPTS)

serve: $(PREREQS) ## rebuild on change and serve on http://127.0.0.1:8000
	BOOK_LANG=$(BOOK_LANG) $(VENV)/bin/sphinx-autobuild -c . source $(OUT)/html --host 127.0.0.1 --port 8000 \
	  --ignore '*/_static/mermaid/*'

# -- checks -------------------------------------------------------------------

test: $(PREREQS) node-tools ## run the test suite (unit, Sphinx test roots, real-book integration)
	$(PY) -m pytest $(PYTESTOPTS)

validate: $(PREREQS) ## fail-closed gate: pin, anchors, curriculum, reviews, links, diagrams
	$(PY) -m vllm_book.sync validate $(if $(PROFILE),--profile $(PROFILE))

impact: $(PREREQS) ## report what upgrading to TO=<release> does to the book
	@test -n "$(TO)" || { echo "usage: make impact TO=<vLLM release, e.g. 0.33.0>"; exit 2; }
	$(PY) -m vllm_book.sync impact --to $(TO)

refresh: $(PREREQS) ## move the pin to TO=<release|sha>; marks affected chapters for review; regenerates the CLI spec
	@test -n "$(TO)" || { echo "usage: make refresh TO=<vLLM release or commit>"; exit 2; }
	$(PY) -m vllm_book.sync refresh --to $(TO)
	@# the pin moved: the CLI spec of the new release (installs it into $(VLLM_VENV), 7 GB); SKIP_CLI_SPEC=1 defers it
	@# (validate then fails until `make cli-spec` has run)
	$(if $(SKIP_CLI_SPEC),@echo "skipped: make cli-spec (validate fails until it runs)",$(MAKE) cli-spec)

cli-spec: $(VLLM_VENV)/.installed ## regenerate the vLLM CLI spec that validate checks the book's commands against
	$(VLLM_VENV)/bin/python tools/dump_vllm_cli.py --pin vllm-pin.toml

bench: $(PREREQS) node-tools ## measure build times and sizes (writes bench/results.json; BENCH_ARGS="--synthetic 60")
	$(PY) bench/bench.py $(BENCH_ARGS)

# -- authoring ------------------------------------------------------------------

# CHAPTER, not PATH: a make variable named PATH would replace the shell's search path in the recipe.
new-chapter: $(STAMP) ## start a chapter: CHAPTER=<part>/<NN-topic> [TITLE=… HOOK=… LEVEL=…] from docs/chapter-template.md
	@test -n "$(CHAPTER)" || { echo 'usage: make new-chapter CHAPTER=05-distributed/06-topic [TITLE="…" HOOK="…" LEVEL=进阶]'; exit 2; }
	$(PY) -m vllm_book.sync new-chapter "$(CHAPTER)" $(if $(TITLE),--title "$(TITLE)") $(if $(HOOK),--hook "$(HOOK)") $(if $(LEVEL),--level "$(LEVEL)")

experiments: $(VLLM_VENV)/.installed ## run the CPU experiments on the real vLLM scheduler and regenerate the CLI spec; fail if either differs from what is committed
	@cd $(CURDIR) && PYTHONHASHSEED=0 $(VLLM_VENV)/bin/python -m experiments run $(EXPERIMENTS_ARGS) 2>&1 \
	  | { grep -vE "vllm\._C|CUDA_HOME|prefers block_size is multiples of 32|Model Runner V2 requires Triton" || true; }; \
	  exit $${PIPESTATUS[0]}
	@# the CLI spec validate checks commands against: regenerated from the same vLLM, must equal the committed one
	@mkdir -p $(BUILDDIR) && $(VLLM_VENV)/bin/python tools/dump_vllm_cli.py --pin vllm-pin.toml --stdout > $(BUILDDIR)/.cli-spec.json
	@if cmp -s $(BUILDDIR)/.cli-spec.json $(CLI_SPEC); then echo "cli-spec: $(CLI_SPEC) equals the pinned parser's"; \
	else cp $(BUILDDIR)/.cli-spec.json $(CLI_SPEC); \
	  echo "error: $(CLI_SPEC) differed from the pinned parser's; rewritten: review the diff and commit it"; exit 1; fi

# -- translation --------------------------------------------------------------

gettext: $(PREREQS) ## extract message catalogs into _build/gettext
	BOOK_LANG=zh_CN $(SPHINXBUILD) -M gettext source $(BUILDDIR) -c . -j auto

intl-update: gettext ## update locale/en/LC_MESSAGES/*.po from the catalogs
	$(VENV)/bin/sphinx-intl update -p $(BUILDDIR)/gettext -d locale -l en

# -- housekeeping ---------------------------------------------------------------

clean: ## remove build outputs (keeps .venv, vllm/ and the download cache)
	rm -rf $(BUILDDIR) source/_static/mermaid source/_static/mathjax
