"""experiments/calibrate_pooled.py: the answer check calibrated on two folders' dev rows at once, no model call."""
import json

from experiments import calibrate_pooled as cp

FEATS = ("agreed", "stated", "relevant")


def _row(i, right, agreed, source, answer=None, status="supported"):
    return {"id": f"{source}-{i}", "source": source, "type": "multi", "answer": answer or ("x" if right else "y"),
            "right": right,
            "status": status, "features": {"agreed": float(agreed), "stated": 1.0, "relevant": 1.0}}


def _run(tmp_path, name, rows, items):
    (tmp_path / name).mkdir()
    (tmp_path / name / "golden.json").write_text(json.dumps(items))
    (tmp_path / name / "run.json").write_text(json.dumps({"rows": {"smart": rows}}))
    return f"{tmp_path / name / 'run.json'}:{tmp_path / name / 'golden.json'}"


def test_rows_are_grouped_by_folder_split_by_their_items_and_relabelled(tmp_path):
    items = [{"id": "cat-0", "question": "In which building is the office of Dr Vell?", "answer": "Kestle Hall",
              "split": "dev"},
             {"id": "cat-1", "question": "In which room is MUS 320 taught?", "answer": "KST 112", "split": "test"}]
    rows = [_row(0, True, 1, "cat", answer="KST 206"), _row(1, False, 1, "cat", answer="KST 112")]
    got = cp.load(_run(tmp_path, "catalogue", rows, items))
    assert [(r["split"], r["group"]) for r in got] == [("dev", "smart/catalogue"), ("test", "smart/catalogue")]
    # labels and the kind asked read again with today's code: 'KST 206' is not Kestle Hall, and 'KST 112' is right
    assert got[0]["right"] is False and got[0]["features"]["relevant"] == 1.0
    assert got[1]["right"] is True and got[1]["features"]["relevant"] == 1.0


def test_verified_needs_the_status_the_stated_answer_the_kind_and_the_threshold():
    cal = {"features": list(FEATS), "coef": [4.0, 0.0, 0.0], "intercept": -2.0, "threshold": 0.8}
    ok = _row(0, True, 1, "c")
    assert cp.shown_verified(ok, cal)
    assert not cp.shown_verified({**ok, "status": "disputed"}, cal)
    assert not cp.shown_verified({**ok, "features": {**ok["features"], "relevant": 0.0}}, cal)
    assert not cp.shown_verified({**ok, "features": {**ok["features"], "agreed": 0.0}}, cal)   # score 0.12


def test_the_threshold_keeps_the_target_on_each_folder_not_only_on_the_pool(tmp_path):
    # folder a: agreed answers always right; folder b: agreed answers right 3 times in 4. Pooled, agreed rows are
    # right 0.9 of the time; b's alone fall short, so nothing may be verified.
    def items(src, n):
        return [{"id": f"{src}-{i}", "question": "Who?", "answer": "x", "split": "dev"} for i in range(n)]
    a = [_row(i, True, 1, "a") for i in range(30)] + [_row(30 + i, False, 0, "a") for i in range(30)]
    b = [_row(i, i % 4 != 0, 1, "b") for i in range(12)] + [_row(12 + i, False, 0, "b") for i in range(12)]
    rows = cp.load(_run(tmp_path, "a", a, items("a", 60))) + cp.load(_run(tmp_path, "b", b, items("b", 24)))
    cal = cp.fit([{**r, "pattern": r["group"]} for r in rows], 0.9)
    assert cal["threshold"] > 1
    only_a = cp.load(_run(tmp_path, "a2", a, items("a", 60)))
    cal = cp.fit([{**r, "pattern": r["group"]} for r in only_a], 0.9)
    table = cp.table(only_a, cal)
    assert table[("smart/a2", "multi")]["verified"] == 30 and table[("smart/a2", "multi")]["precision"] == 1.0
