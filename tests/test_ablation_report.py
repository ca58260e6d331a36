"""experiments/ablation_report.py: each layer's gain and cost from an ablation run (offline)."""
from experiments import ablation_report as ar


def row(right=True, disputed=False, calls=1, judge_calls=2, quarantined=()):
    return {"right": right, "disputed": disputed, "calls": calls, "judge_calls": judge_calls, "check_calls": 1,
            "seconds": 10.0, "judge_seconds": 4.0, "check_seconds": 1.0,
            "verdicts": [{"quarantined": list(quarantined)}]}


def run():
    table = lambda f1, vp: {"questions": 2, "answer_f1": f1, "right_share": 0.5, "citation_precision": 0.9,
                            "verified_precision": vp, "verified_coverage": 0.3}
    return {"table": {"all": {"smart": table(0.60, 0.95), "smart -links": table(0.50, 0.95),
                              "smart -disputes": table(0.60, 0.95)}},
            "rows": {"smart": [row(), row(right=False, quarantined=["S1"])],
                     "smart -links": [row(), row(right=False)],
                     "smart -disputes": [row(judge_calls=1), row(right=False, judge_calls=1)]}}


def test_a_layer_that_moves_its_target_gains_and_one_that_does_not_has_none():
    lines, gains = ar.report([("golden", run())])
    assert ar.verdicts(gains) == {"links": "gain", "disputes": "none"}
    links_line = next(x for x in lines if x.startswith("-links"))
    assert "+0.100" in links_line                      # F1 0.60 with it, 0.50 without
    disputes_line = next(x for x in lines if x.startswith("-disputes"))
    assert "+1.00" in disputes_line                    # one more judge call per answer with the layer


def test_costs_count_every_call_and_only_right_answers_shown_disputed():
    c = ar.costs([row(disputed=True), row(right=False, disputed=True), row(quarantined=["S2"])])
    assert c["calls"] == 4 and c["seconds"] == 15.0
    assert c["right_disputed"] == 0.5 and abs(c["quarantined"] - 1 / 3) < 1e-9


def test_verdict_counts_only_the_runs_it_is_told_to():
    no_gain = run()
    no_gain["table"]["all"]["smart -links"]["answer_f1"] = 0.60        # links gains nothing on this run
    _, gains = ar.report([("catalogue", run()), ("golden", no_gain)])
    assert ar.verdicts(gains)["links"] == "gain"                       # on any run: the catalogue's gain counts
    assert ar.verdicts(ar.only(gains, ["golden"]))["links"] == "none"  # on golden only: it gains nothing
