"""experiments/bench_llm.py, bench_answer.py, spec_probe.py, short_probe.py: the arithmetic of their figures (timings
come from the real engine in their own runs, never from tests)."""
import pytest

from experiments import bench_answer, bench_llm, short_probe, spec_probe


def test_speeds_are_llama_cpp_counts_and_what_the_caller_waits():
    own, wall, tokens = bench_llm._speeds([(96, 3000.0, 100.0, 3.2), (96, 4000.0, 100.0, 4.1), (90, 3000.0, 0.0, 3.0)])
    assert own == pytest.approx(30.0) and tokens == 96
    assert wall == pytest.approx(30.0)   # 96 / 3.1, 96 / 4.0, 90 / 3.0 -> median 30


def test_ratio_engine_raw_divides_the_labs_figure_by_llama_cpps_own():
    lab = {k: 10.0 for _, k, _ in bench_llm.ROWS} | {"answers_identical": True, "schema_generation_tok_s": 9.0}
    raw = {"prompt_tok_s": 20.0, "generation_tok_s": 12.5, "generation_wall_tok_s": 10.0}
    res = bench_llm.summary({"native": [lab, lab]}, {"native": [raw]})["native"]
    assert res["raw"]["generation_tok_s"] == 12.5
    assert res["ratio_engine_raw"] == {"prompt_tok_s": 0.5, "generation_tok_s": 0.8, "generation_wall_tok_s": 1.0,
                                       "schema_generation_tok_s": 0.72, "logprobs_generation_tok_s": 0.8}
    assert "raw" not in bench_llm.summary({"wheel": [lab]}, {})["wheel"]   # an Ollama server: nothing to compare


def test_answer_bench_figures_and_a_bad_ref(tmp_path):
    rows = [{"seconds": s, "answer_s": s / 2, "checks_s": s / 2, "calls": 3, "prompt_tokens": 900,
             "completion_tokens": 120} for s in (10.0, 12.0, 30.0, 11.0)]
    f = bench_answer.summary(rows)
    assert (f["n"], f["p50"], f["p90"], f["mean"], f["answer_p50"]) == (4, 11.5, 30.0, 15.75, 5.75)
    assert f["prompt_new_mean"] == 0   # rows from a version that wrote no trace
    a = [{"answer": "Paris", "verdicts": [True], "status": "verified"}, {"answer": "Rome", "verdicts": [True, False],
                                                                         "status": "supported"}]
    b = [dict(a[0]), {**a[1], "verdicts": [True, True]}]
    assert bench_answer.same_results(a, b) == 1 and bench_answer.same_results(a, a) == 2
    with pytest.raises(SystemExit, match="git worktree add no-such-ref failed"):
        bench_answer.tree_of("no-such-ref", tmp_path)


def test_spec_probe_sums_and_ratios():
    row = lambda plain, ngram, same: {"plain": {"gen_s": plain, "seconds": plain + 5, "generated": 100},
                                      "ngram": {"gen_s": ngram, "seconds": ngram + 5, "drafted": 40, "accepted": 10},
                                      "same": same}
    f = spec_probe.summary([row(10.0, 5.0, True), row(4.0, 6.0, False)])
    assert (f["n"], f["same_reply"], f["generated_tokens"], f["slower_questions"]) == (2, 1, 200, 1)
    assert f["ratio_gen"] == pytest.approx(11 / 14) and f["ratio_seconds"] == pytest.approx(21 / 24)
    assert f["median_ratio_gen"] == pytest.approx((0.5 + 1.5) / 2) and f["accepted_share"] == 0.25


def test_short_probe_schema_caps_and_figures():
    schema = short_probe.short_schema(["S1", "S2"])
    assert schema["properties"]["sentences"]["maxItems"] == short_probe.SHORT_SENTENCES
    assert schema["properties"]["sentences"]["items"]["properties"]["text"]["maxLength"] == short_probe.SHORT_CHARS
    assert schema["properties"]["sentences"]["items"]["properties"]["sources"]["items"]["enum"] == ["S1", "S2"]
    import generate   # the lab's own schema is left as it was
    assert generate.answer_schema(["S1"])["properties"]["sentences"]["maxItems"] == 4
    assert short_probe.parsed('{"sentences": [{"text": "a", "sources": ["S1"]}], "answer": " Paris "}') == ("Paris", 1)
    assert short_probe.parsed('{"sentences": [') == ("", 0)
    row = lambda gf, gs, a, b: {"full": {"gen_s": gf, "generated": 100, "f1": 1.0, "sentences": 3, "answer": a},
                                "short": {"gen_s": gs, "generated": 50, "f1": 0.5, "sentences": 2, "answer": b}}
    f = short_probe.summary([row(10.0, 4.0, "x", "x"), row(10.0, 6.0, "x", "y")])
    assert (f["ratio_gen"], f["ratio_tokens"], f["same_answer"]) == (0.5, 0.5, 1)
    assert (f["full"]["f1"], f["short"]["f1"], f["short"]["sentences"]) == (1.0, 0.5, 2)
