# make demo: set up .venv (package + SPIN), check every example, print the verdicts.
# make test: the same set-up, then the whole test suite.
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test setup spin chromium bench clean fuzz mutate exhaustive

setup: spin chromium $(STAMP)

$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[test,dsl,quack,sass]'
	$(VPY) -m pip install -q --no-deps flash-attn-4==4.0.0b36
	$(VPY) -m pip install -q einops
	touch $(STAMP)

spin:
	@if ! command -v spin >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing SPIN (Debian package spin)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq spin gcc >/dev/null; \
	  else \
	    echo "SPIN is missing; run: sudo apt-get install -y spin"; exit 1; \
	  fi; \
	fi
	@command -v gcc >/dev/null 2>&1 || { echo "gcc is missing; run: sudo apt-get install -y gcc"; exit 1; }

# the HTML report's tests load the page in Debian's chromium (driven by Playwright from PyPI)
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's chromium (for the HTML report's browser tests)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else \
	    echo "chromium is missing; run: sudo apt-get install -y chromium"; exit 1; \
	  fi; \
	fi

demo: setup
	$(VPY) -m warpspin.demo

# CI must run the tests that need the DSL and quack, never skip them. The files are spread over
# TEST_JOBS processes (pytest-xdist; one file stays in one process, so its cached traces are
# made once): CI's machine has 2 cores. The tests marked `exhaustive` (searches of millions of
# states) are left to make exhaustive.
TEST_JOBS ?= 2
test: setup
	WARPSPIN_REQUIRE_ALL=1 $(VPY) -m pytest -q -n $(TEST_JOBS) --dist loadfile -m "not exhaustive"

# the exhaustive tests, one row each (bench/exhaustive.py; about 10 minutes on 2 cores)
exhaustive: setup
	WARPSPIN_REQUIRE_ALL=1 $(VPY) bench/exhaustive.py -n $(TEST_JOBS)

# make fuzz: the differential tests (SPIN reduced, plain and fused vs the interpreter, and on the
# protocols of each construct family: tensormaps, buffers, counters, wgmma data, cp.async, DSMEM,
# tcgen05, flags, shared slots; the
# happens-before engine vs the interpreter on random, well-synchronized and mutant protocols; its
# cutoff over their trip counts opened) on fresh random protocols, many more than make test's
# fixed derandomized set; prints how many ran and agreed. WARPSPIN_DIFF_EXAMPLES=n sets the number (default 1000 for the reduced encoding).
fuzz: setup
	WARPSPIN_DIFF_FUZZ=1 WARPSPIN_DIFF_EXAMPLES=$${WARPSPIN_DIFF_EXAMPLES:-1000} \
	  $(VPY) -m pytest -q -p no:cacheprovider tests/test_differential.py \
	  -k "interpreter or plain_and_reduced_agree"
	WARPSPIN_DIFF_FUZZ=1 WARPSPIN_DIFF_EXAMPLES=$${WARPSPIN_DIFF_EXAMPLES:-1000} \
	  $(VPY) -m pytest -q -p no:cacheprovider tests/test_hb.py -k "agree"
	WARPSPIN_DIFF_FUZZ=1 WARPSPIN_DIFF_EXAMPLES=$${WARPSPIN_DIFF_EXAMPLES:-1000} \
	  $(VPY) -m pytest -q -p no:cacheprovider tests/test_cutoff.py -k "drawn"

# one-edit mutants of every example and catalog kernel: bench/mutants.md (hours on 2 cores; a
# fixed sample: MUTANTS_PER_KERNEL=16)
mutate: setup
	$(VPY) bench/mutants.py --per-kernel $${MUTANTS_PER_KERNEL:-0}

bench: setup
	$(VPY) bench/scale.py
	$(VPY) bench/examples.py
	$(VPY) bench/values.py
	$(VPY) bench/compile.py

clean:
	rm -rf $(VENV) build *.egg-info
