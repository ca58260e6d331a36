# Two commands do all set-up on a fresh machine with Python 3.10+: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum requirements.txt | cut -d' ' -f1)
# CORPUS=DIR: index, demo and app on your own folder of .txt .md .pdf .docx .html files (e.g. CORPUS=catalogue/docs).
# GOLDEN: its golden questions (default: a golden.json in DIR or beside it, if there is one); QUESTION: the one make demo asks
# (default for DIR: the first two-hop question of GOLDEN).
CORPUS ?= corpus
ifeq ($(CORPUS),corpus)
GOLDEN ?= golden.json
QUESTION ?= Indian film photographer Jagdish Mali, known for taking images of various celebrities including Shabana Azmi, is father to which Bollywood actress?
else
GOLDEN ?= $(firstword $(wildcard $(patsubst %/,%,$(CORPUS))/golden.json $(dir $(patsubst %/,%,$(CORPUS)))golden.json))
QUESTION ?= $(shell test -f "$(GOLDEN)" && $(PY) -c 'import json,sys; g=json.load(open(sys.argv[1])); print(next((q["question"] for q in g if q.get("type") == "multi"), g[0]["question"]))' "$(GOLDEN)")
endif
ON_CORPUS := --corpus $(CORPUS)$(if $(GOLDEN), --golden $(GOLDEN))

.PHONY: install native index demo test test-slow lint bench benchmark replay app handin clean

# pip byte-compiles the ~19,000 .py files it installs one at a time; compileall -j 0 does it on every core. The few
# files written for a newer Python fail to compile, as they do under pip: that is not an error. The .pyc files are
# needed: with PYTHONDONTWRITEBYTECODE set, nothing else writes them. results/install_no_compile.txt
$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --no-compile --upgrade pip
	$(BIN)/python -m pip install -q --no-compile -r requirements.txt
	$(BIN)/python -m compileall -q -j 0 "$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null || true
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

native: install           ## compile llama.cpp (xllamacpp) for this CPU once (~20 min, offline; 1 s from the wheel cache); every script then uses it
	$(BIN)/python -m lab.native --build

index: install            ## build or update the Chroma index of corpus/ (titled chunks); CORPUS=DIR: of your folder
	$(BIN)/python vector_index.py --corpus $(CORPUS)

demo: index               ## the main job: a multi-hop golden question, retrieved, answered, citations verified
	@test -n "$(QUESTION)" || { echo 'make demo CORPUS=$(CORPUS): no golden.json beside it, so say what to ask: QUESTION="..."' >&2; exit 2; }
	@$(BIN)/python -m lab.native --hint
	$(BIN)/python retrieve.py "$(QUESTION)" --corpus $(CORPUS)
	$(BIN)/python assembly.py "$(QUESTION)" --corpus $(CORPUS)

test: install             ## the whole test suite (fast fixture tests + a few real-engine ones), on both cores
	$(BIN)/python -m pytest -n 2

test-slow: install        ## the nine longer real-engine tests make test leaves out (~6 min on the wheel; CI runs them)
	$(BIN)/python -m pytest -m slow

lint: install             ## the style check: ruff with the rules in pyproject.toml (CI runs it)
	$(BIN)/ruff check .

bench: index              ## speed figures: build vs raw embedding, latency at 100k chunks, ANN loss
	$(BIN)/python -m experiments.bench_retrieval

replay: index             ## every committed table re-made from results/cache with the model refused: one line each
	$(BIN)/python -m grading.replay --all

app: index                ## the demo page on http://127.0.0.1:7860 (Ctrl-C stops it); CORPUS=DIR: on your folder
	$(BIN)/python app.py $(ON_CORPUS)

benchmark: index          ## every pattern on 24 golden questions: results/benchmark.{json,md} + PNGs (hours; cached rows reused)
	$(BIN)/python benchmark.py

handin: install           ## your results files (rubric.json's weeks) + a manifest -> handin-<you>.tar.gz, for grading/grade.py
	$(BIN)/python -m grading.handin

clean:                    ## remove the index (corpus/ and golden.json stay)
	rm -rf .rag
