# Two commands do all set-up on a fresh machine with Python 3.10+: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cksum requirements.txt | cut -d' ' -f1)
QUESTION ?= Indian film photographer Jagdish Mali, known for taking images of various celebrities including Shabana Azmi, is father to which Bollywood actress?

.PHONY: install native index demo test test-slow lint bench benchmark app handin clean

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements.txt
	rm -f $(VENV)/.installed-* && touch $(STAMP)

install: $(STAMP)

native: install           ## compile llama.cpp (xllamacpp) for this CPU once (~20 min, offline; 1 s from the wheel cache); every script then uses it
	$(BIN)/python -m lab.native --build

index: install            ## build or update the Chroma index of corpus/ (titled chunks)
	$(BIN)/python vector_index.py

demo: index               ## the main job: a multi-hop golden question, retrieved, answered, citations verified
	@$(BIN)/python -m lab.native --hint
	$(BIN)/python retrieve.py "$(QUESTION)"
	$(BIN)/python verify_citations.py --ask "$(QUESTION)"

test: install             ## the whole test suite (fast fixture tests + a few real-engine ones)
	$(BIN)/python -m pytest

test-slow: install        ## the longer real-engine tests make test leaves out (~4 min on the wheel; CI runs them)
	$(BIN)/python -m pytest -m slow

lint: install             ## the style check: ruff with the rules in pyproject.toml (CI runs it)
	$(BIN)/ruff check .

bench: index              ## speed figures: build vs raw embedding, latency at 100k chunks, ANN loss
	$(BIN)/python -m experiments.bench_retrieval

app: index                ## the demo page on http://127.0.0.1:7860 (Ctrl-C stops it)
	$(BIN)/python app.py

benchmark: index          ## every pattern on 24 golden questions: results/benchmark.{json,md} + PNGs (hours; cached rows reused)
	$(BIN)/python benchmark.py

handin: install           ## your results files (rubric.json's weeks) + a manifest -> handin-<you>.tar.gz, for grading/grade.py
	$(BIN)/python -m grading.handin

clean:                    ## remove the index (corpus/ and golden.json stay)
	rm -rf .rag
