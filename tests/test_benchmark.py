"""benchmark.py: one row per pattern with every column, the per-question cache (a rerun makes no LLM call and
writes the same figures; rows of the pattern scripts are reused), --fresh, bad input, a failed question left out
and retried, GraphRAG rows skipped (with the reason) when no graph is built and run on a built titles graph.

Every model call goes to SCRIPTED_MODEL, an llm.ScriptedModel (a scripted stand-in, never a language model)
that answers any JSON schema with a fixed valid reply; retrieval runs on the real fixture-corpus index.

    pytest tests/test_benchmark.py    # ~25 s on 2 busy cores, most of it loading the embedding model
"""
import json
import re
import sys
from pathlib import Path

import pytest

import assembly
import benchmark
import decompose
import flare
import graph_index
import graphrag
import harness
import llm
import patterns
import retrieve
from generate import JSON_SYSTEM
from lab.cache import moved

COLUMNS = ["answer_em", "answer_f1", "doc_recall", "citation_recall", "citation_precision", "llm_calls",
           "prompt_tokens", "completion_tokens", "seconds_p50"]
GENERATE_SYSTEM = JSON_SYSTEM
NON_GRAPH = [p for p in patterns.PATTERNS if not p.startswith("graph")]
# other strings: "" (no query, no subject)
STRINGS = {"text": "Tomas Vell designed Ashford Bridge.", "answer": "Tomas Vell"}


def scripted_fill(schema, key=""):
    """A fixed reply that follows a JSON schema: enums take the first value (YES, yes, fully), or the highest
    number (CRAG grade 1, usefulness 5); arrays one item. {'properties': {'verdict': {'enum': ['YES', 'NO']}}, ...}
    -> {'verdict': 'YES'}"""
    if "enum" in schema:
        values = schema["enum"]
        return max(values) if all(isinstance(v, (int, float)) for v in values) else values[0]
    kind = schema.get("type")
    if kind == "object":
        return {k: scripted_fill(v, k) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [scripted_fill(schema.get("items", {}), key)] * max(1, schema.get("minItems", 1))
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    return STRINGS.get(key, "")[:schema.get("maxLength", 1000)]


def scripted_reply(messages, schema):
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    if system == decompose.DECOMPOSE_SYSTEM:  # a two-hop chain, so the iterative mode runs its hops
        return json.dumps({"look_up_first": "", "sub_questions": ["Who designed Ashford Bridge?",
                                                                  "In which village was [ANSWER_1] born?"]})
    if system == flare.FLARE_SYSTEM:
        return "Answer: Tomas Vell"
    if schema is None:  # the lab's free-text prompt
        return "Tomas Vell designed Ashford Bridge [S1]."
    return json.dumps(scripted_fill(schema))


def SCRIPTED_MODEL():
    return llm.ScriptedModel(scripted_reply)


@pytest.fixture(autouse=True)
def embed_once(monkeypatch):
    """The real query embeddings, each text embedded once: the patterns repeat their queries across rows."""
    seen = {}

    def embed(texts):
        missing = [t for t in dict.fromkeys(texts) if t not in seen]
        if missing:
            seen.update(zip(missing, real_embed(missing)))
        return [seen[t] for t in texts]
    real_embed = retrieve.embed
    monkeypatch.setattr(retrieve, "embed", embed)


@pytest.fixture
def own_caches(tmp_path, monkeypatch):
    """Answers, rows and judge verdicts cached under tmp_path only; GraphRAG looks for its graph there too (none)."""
    path = lambda corpus, chunker, extractor: tmp_path / f"graph-{extractor}.json"
    monkeypatch.setattr(graphrag, "graph_path", path)
    monkeypatch.setattr(graph_index, "graph_path", path)   # where build() writes it
    with moved(("answers", "rows", "judge"), tmp_path / "cache"):
        yield tmp_path / "cache"


def run(corpus, golden_path, out, *extra, patterns=",".join(NON_GRAPH)):
    """benchmark.main on the fixture; -> (report JSON, printed text, LLM calls the scripted model got)."""
    model = SCRIPTED_MODEL()
    with llm.use_model(model):
        benchmark.main(["--corpus", str(corpus), "--golden", str(golden_path), "--limit", "2", "--json", str(out),
                        "--patterns", patterns, *extra])
    return json.loads(out.read_text()), len(model.calls)


def test_table_cache_rerun_and_fresh(corpus, golden_path, own_caches, tmp_path, capsys):
    out = tmp_path / "res" / "bench.json"
    first, calls = run(corpus, golden_path, out, patterns="all")
    text = capsys.readouterr().out
    assert calls > 0 and first["run"]["llm_calls_now"] == calls
    assert first["patterns"] == NON_GRAPH and set(first["skipped"]) == {"graph_local", "graph_global"}
    assert all("no graph at" in why and "graphrag.py --build" in why for why in first["skipped"].values())
    assert "skipped graph_local: no graph at" in text
    assert first["sample"] == "1 single (fixture 1), 1 multi (fixture 1)" and len(first["questions"]) == 2
    for split, n in (("all", 2), ("single", 1), ("multi", 1)):
        assert list(first["table"][split]) == NON_GRAPH
        for name, s in first["table"][split].items():
            assert s["questions"] == n and all(isinstance(s[c], (int, float)) for c in COLUMNS), (split, name)
        assert f"\n{split} (n={n})\npattern" in text
    for name in NON_GRAPH:  # one printed line per pattern and split
        assert len(re.findall(rf"^{name} +\d", text, re.M)) == 3
    table = first["table"]["all"]
    assert table["seed"]["llm_calls"] == 1 and table["single"]["llm_calls"] == 1  # one answer call each
    assert table["iterative"]["llm_calls"] > table["parallel"]["llm_calls"] > 1  # decompose (+ hops)
    assert table["single"]["answer_f1"] > 0 and table["seed"]["prompt_tokens"] > 0
    assert out.with_suffix(".md").read_text().count("| seed |") == 3
    assert all((tmp_path / "res" / name).stat().st_size > 1000 for name in ("bench_cost.png", "bench_split.png"))

    again, calls = run(corpus, golden_path, out, patterns="all")  # same command: every row from the cache
    assert calls == 0 and again["run"]["llm_calls_now"] == 0
    assert {k: v for k, v in again.items() if k != "run"} == {k: v for k, v in first.items() if k != "run"}
    assert format_tables(capsys.readouterr().out) == format_tables(text)

    fresh, calls = run(corpus, golden_path, out, "--fresh", patterns="seed,single")
    assert calls == 4 and list(fresh["table"]["all"]) == ["seed", "single"]  # 2 questions x 2 patterns; verdicts cached
    assert fresh["table"]["all"]["seed"]["answer_f1"] == first["table"]["all"]["seed"]["answer_f1"]


def format_tables(text):
    """The printed table lines (from the first split header to the summary line)."""
    lines = text.splitlines()
    return lines[lines.index("all (n=2)"):next(i for i, line in enumerate(lines) if line.startswith("this run:"))]


def test_a_failed_question_is_left_out_and_retried_on_rerun(corpus, golden_path, own_caches, tmp_path, capsys):
    multi = {g["question"]: g["id"] for g in json.loads(golden_path.read_text()) if g["type"] == "multi"}

    def broken_on_multi(messages, schema):  # the model fails on multi-hop questions only
        if any(q in messages[-1]["content"] for q in multi):
            raise llm.LLMError("scripted failure")
        return scripted_reply(messages, schema)
    out = tmp_path / "f.json"
    with llm.use_model(llm.ScriptedModel(broken_on_multi)):
        benchmark.main(["--corpus", str(corpus), "--golden", str(golden_path), "--limit", "2", "--json", str(out),
                        "--patterns", "single"])
    report = json.loads(out.read_text())
    assert [f["pattern"] for f in report["failed"]] == ["single"] and report["failed"][0]["id"] in multi.values()
    assert report["table"]["all"]["single"]["questions"] == 1 and "multi" not in report["table"]
    assert "INCOMPLETE: 1 question(s) failed" in capsys.readouterr().out
    model = SCRIPTED_MODEL()
    with llm.use_model(model):
        benchmark.main(["--corpus", str(corpus), "--golden", str(golden_path), "--limit", "2", "--json", str(out),
                        "--patterns", "single"])
    again = json.loads(out.read_text())
    answered = [m[-1]["content"] for m, s in model.calls if "sentences" in json.dumps(s)]   # answers, not checks
    assert len(answered) == 1 and any(q in answered[0] for q in multi)  # only the failed question, again
    assert not again["failed"] and again["table"]["all"]["single"]["questions"] == 2


def test_unknown_pattern_and_bad_limit_are_one_line_errors(corpus, golden_path, own_caches, tmp_path):
    for extra, words in ((["--patterns", "seed,telepathy"], "unknown pattern 'telepathy': choose from seed, single"),
                         (["--limit", "-3"], "--limit must be 0 (all) or more")):
        with pytest.raises(SystemExit) as e:
            benchmark.main(["--corpus", str(corpus), "--golden", str(golden_path), "--json", str(tmp_path / "x.json"),
                            *extra])
        assert str(e.value).startswith(f"benchmark: {words}") and "\n" not in str(e.value)
    assert not (tmp_path / "x.json").exists()


def test_only_graph_patterns_without_a_graph_is_an_error(corpus, golden_path, own_caches, tmp_path, capsys):
    with pytest.raises(SystemExit, match="benchmark: no pattern left to run"):
        run(corpus, golden_path, tmp_path / "g.json", patterns="graph_local,graph_global")
    assert "skipped graph_global: no graph at" in capsys.readouterr().out


def test_graph_rows_run_when_a_graph_is_built(corpus, golden_path, own_caches, tmp_path):
    """A titles graph (no LLM to build) of the fixture corpus: both graph rows run, with the extractor in the key."""
    graphrag.build(corpus, "titled", "titles", progress=False)
    report, calls = run(corpus, golden_path, tmp_path / "g.json", "--graph-extractor", "titles",
                        patterns="graph_global,graph_local")
    assert report["patterns"] == ["graph_global", "graph_local"] and not report["skipped"] and calls > 0
    assert all(report["table"]["all"][p]["questions"] == 2 for p in report["patterns"])
    assert [r["id"] for r in report["rows"]["graph_local"]] == report["questions"]
    with pytest.raises(SystemExit, match="no pattern left to run"):  # the llm extractor's graph: not built
        run(corpus, golden_path, tmp_path / "g.json", patterns="graph_local")


def test_sample_is_balanced_on_the_real_golden_file():
    """The default 24 questions: 12 single, 12 multi split evenly between the two multi-hop sources."""
    from retrieve import GOLDEN, load_golden, sample_golden
    items = sample_golden(load_golden(GOLDEN), benchmark.DEFAULT_LIMIT)
    assert benchmark.describe_sample(items) == "12 single (musique 12), 12 multi (hotpotqa 6, musique 6)"


@pytest.mark.parametrize("pattern, module", [("flare", "flare"), ("self_rag", "self_rag"), ("crag", "crag")])
def test_pattern_rows_are_keyed_as_the_scripts_own_eval_keys_them(pattern, module, corpus, golden_path, monkeypatch):
    """benchmark.py and `python <pattern>.py --eval` must key a row alike, or neither reuses the other's rows."""
    import importlib
    mod, seen = importlib.import_module(module), {}
    monkeypatch.setattr(harness, "pattern_main",
                        lambda name, args, answer, kw, *rest, **k: seen.update(name=name, kw=kw))
    monkeypatch.setattr(sys, "argv", [f"{module}.py", "--corpus", str(corpus), "--eval", "2"])
    mod.main()
    name, settings, _ = benchmark.pattern_specs([pattern], corpus)[0][pattern]
    assert (name, settings) == (seen["name"], {k: str(v) if isinstance(v, Path) else v for k, v in seen["kw"].items()})
    assert settings["corpus"] == str(corpus) and "k" in settings


def test_the_ablation_writes_a_row_per_layer_left_out_in_json_and_markdown(corpus, golden_path, own_caches, tmp_path):
    out = tmp_path / "abl.json"
    report, _ = run(corpus, golden_path, out, "--ablation", patterns="single")
    names = ["single"] + [f"single -{layer}" for layer in assembly.LAYERS]
    assert list(report["table"]["all"]) == names and set(report["rows"]) == set(names)
    md = out.with_suffix(".md").read_text()   # the markdown once failed on an ablation row's name (KeyError)
    assert "- `single -disputes`: " in md and md.count("layers left out: ") == len(assembly.LAYERS)
