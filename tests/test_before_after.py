"""experiments/before_after.py: issue 59's before/after table from two benchmark runs (offline)."""
import pytest

from experiments import before_after


def run(f1, ids=("a", "b"), chained=("b",)):
    rows = [{"id": i, "type": "multi" if i == "b" else "single",
             "retrievals": [{"method": "chain" if i in chained else "fused"}]} for i in ids]
    table = {"answer_f1": f1, "answer_em": 0.5, "verified_precision": None}
    return {"table": {"all": {"smart": table}}, "rows": {"smart": rows}}


def test_a_drop_past_the_tolerance_is_worse_and_a_small_one_is_ok():
    lines = {label: (x, y, v) for _, label, x, y, v in before_after.compare(run(0.70), run(0.67))}
    assert lines["F1"] == (0.70, 0.67, "WORSE") and lines["EM"][2] == "ok"
    assert lines["v-precision"][2] == "n/a"
    lines = {label: v for _, label, _, _, v in before_after.compare(run(0.70), run(0.685))}
    assert lines["F1"] == "ok"


def test_the_router_is_right_when_the_route_matches_the_type():
    assert before_after.router_accuracy(run(0.7)["rows"]["smart"]) == 1.0
    assert before_after.router_accuracy(run(0.7, chained=("a",))["rows"]["smart"]) == 0.0
    decomposed = {"type": "multi", "retrievals": [{"method": "fused"}, {"method": "fused"}]}
    assert before_after.routed_multi(decomposed)


def test_runs_on_different_questions_are_refused():
    with pytest.raises(ValueError, match="different questions"):
        before_after.compare(run(0.7), run(0.7, ids=("a", "c")))
