# The two commands of README.md:
#   make book   -- execute every chapter (quick profile, CPU) and build the HTML book into _build/html
#   make test   -- unit tests + strict nbval on every chapter (and on Parts I-III under an imitated other CPU,
#                  tests/test_portability.py) + the built book checked in headless Chromium
# Both create .venv on first use and install what they need. Other targets:
#   make html   -- build the book from the outputs stored in the notebooks (no execution, about a minute)
#   make data   -- download the corpora the chapters use into the cache
#   make datacheck -- fetch every corpus into an empty cache and compare it with its pinned SHA-256

VENV    ?= .venv
PY      := $(VENV)/bin/python
# torch is pinned only here, for this project's own machines; the library itself asks for torch>=2.1,
# so Colab keeps the torch it has.
TORCH   ?= torch==2.13.0
STAMP   := $(VENV)/.installed
# Math is typeset by a copy of MathJax 3 served with the book (no CDN); see _config.yml.
# plotly.js, for the interactive figures, is served with the book too: the build copies the one that the
# plotly package of requirements.txt ships (book/_ext/interactive_figures.py), so it needs no fetch here.
MATHJAX_VERSION ?= 3.2.2
MATHJAX := .mathjax/mathjax/es5/tex-chtml.js
# Seconds one chapter may run in `make book` before the build fails.
CHAPTER_TIMEOUT ?= 1800
# `PROFILE=full make book` executes the chapters at full size (meant for a GPU machine, add GPU=1).
PROFILE ?= quick
# --all: Sphinx re-reads every page, so warnings of unchanged pages are not hidden by an incremental build.
BUILD_FLAGS := --all -W -n --keep-going

.PHONY: book html test data datacheck browser compiler clean

$(STAMP): requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "$(TORCH)"
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

data: $(STAMP)
	$(PY) -m sparse_tutorial.data fetch

# What a fresh machine fetches today, compared with the pins (sparse_tutorial/data/pins.py) whatever is cached.
datacheck: $(STAMP)
	$(PY) -m sparse_tutorial.data check

# npm is needed only to fetch MathJax; on Debian as root it is installed when missing.
$(MATHJAX):
	@command -v npm >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq npm >/dev/null; } \
	  || { echo "make: npm is needed to fetch MathJax (apt-get install npm)" >&2; exit 1; }
	rm -rf .mathjax && mkdir -p .mathjax/mathjax
	cd .mathjax && npm pack --silent "mathjax@$(MATHJAX_VERSION)" >/dev/null
	tar -xzf .mathjax/mathjax-$(MATHJAX_VERSION).tgz -C .mathjax/mathjax --strip-components=1 package/es5 package/LICENSE
	rm .mathjax/mathjax-$(MATHJAX_VERSION).tgz

html: $(STAMP) $(MATHJAX)
	$(VENV)/bin/jupyter-book build . $(BUILD_FLAGS)
	touch _build/html/.nojekyll

book: data compiler $(MATHJAX)
	$(PY) tools/book_tools.py execute --timeout $(CHAPTER_TIMEOUT) --profile $(PROFILE) $(if $(GPU),--gpu)
	$(MAKE) html

# The browser test needs Chromium; on Debian as root it is installed when missing (else the test skips).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
	  || echo "make: chromium not found and not root: the browser test will be skipped" >&2

# sparse_tutorial.projections.fused compiles its C++ kernel on first use; on Debian as root g++ is installed when missing.
compiler:
	@command -v c++ >/dev/null || command -v g++ >/dev/null || command -v clang++ >/dev/null \
	  || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq g++ >/dev/null; } \
	  || { echo "make: a C++ compiler is needed for sparse_tutorial.projections.fused (apt-get install g++)" >&2; exit 1; }

test: data datacheck browser compiler html
	$(PY) -m pytest

clean:
	rm -rf _build .mathjax
