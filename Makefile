# The two commands of README.md:
#   make book   -- execute every chapter (quick profile, CPU) and build the HTML book into _build/html
#   make test   -- unit tests + nbval on every chapter
# Both create .venv on first use and install what they need.

VENV   ?= .venv
PY     := $(VENV)/bin/python
# torch is pinned only here, for this project's own machines (a CPU build of 2.13.0 lies on disk);
# the library itself asks for torch>=2.1, so Colab keeps the torch it has.
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed

.PHONY: book test data clean

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

test: data
	$(PY) -m pytest

book: data
	$(PY) -m sparse_tutorial.book_tools execute
	$(VENV)/bin/jupyter-book build . -W -n --keep-going

clean:
	rm -rf _build
