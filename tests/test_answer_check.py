"""The answer check (answer_check.py): its three parts, the status it gives, and the threshold the fit chooses.
The model is SCRIPTED here (llm.ScriptedModel), never the real engine."""
import json

import pytest

from layers import answer_check as ac
from lab import answers
import llm
from experiments import answer_check_eval as ace

PASSAGES = [{"id": "S1", "chunk_id": "don-hall#0", "title": "Don Hall", "dense": 0.6,
             "text": "Don Hall is an American film director. He grew up in Glenwood, Iowa."},
            {"id": "S2", "chunk_id": "big-stone-gap#0", "title": "Big Stone Gap", "dense": 0.5,
             "text": "Big Stone Gap is a 2014 film written and directed by Adriana Trigiani."}]


def result(answer, sentences, question="Who directed the 2014 film Big Stone Gap?"):
    return {"question": question, "answer": answer, "passages": PASSAGES, "idk": False, "error": None,
            "sentences": [{"text": t, "cites": c} for t, c, _ in sentences], "invalid_ids": []}


def verdicts(sentences):
    return [{"text": t, "cites": c, "supported": ok, "precise": {i: ok for i in c}, "quarantined": {}, "how": "answer"}
            for t, c, ok in sentences]


CAL = {"model": "scripted", "fitted": "test", "features": ["agreed", "stated"], "coef": [3.0, 1.0],
       "intercept": -2.0, "threshold": 0.7, "target": 0.9}   # score: agreed and stated -> 0.88, stated alone -> 0.27


def scripted_answer(said):
    return llm.ScriptedModel(lambda messages, schema: json.dumps({"answer": said}))


def test_right_contains_the_gold_answer_as_whole_words_or_has_token_f1_at_least_0_8():
    item = {"answer": "Adriana Trigiani", "aliases": []}
    assert answers.right("the writer Adriana Trigiani", item) and not answers.right("Trigiani", item)   # F1 0.67
    assert not answers.right("Don Hall", item) and not answers.right("", item)
    room = {"answer": "KST 118", "aliases": []}   # token F1 0.5, but another room
    assert not answers.right("KST 112", room) and answers.right("in room KST 118", room)
    assert answers.right("KST 118", room)
    assert not answers.right("two weeks", {"answer": "6 weeks", "aliases": []})   # F1 0.5: the wrong duration
    assert not answers.right("Engineering Building", {"answer": "Halloran Building", "aliases": []})
    assert not answers.right("Trigiano", {"answer": "Trigiani", "aliases": []})   # whole words, not letters
    assert answers.right("9 March", {"answer": "9 March 2027", "aliases": []})   # F1 0.8
    assert answers.right("Trigiani", {"answer": "Adriana Trigiani", "aliases": ["Trigiani"]})   # an alias
    assert answers.right("March 9, 2027", {"answer": "9 March 2027", "aliases": []})


def test_relevant_asks_for_the_kind_the_question_wants():
    assert not ac.relevant("where will the next winter olimpics be held", "1994")[0]
    assert "asks for a place" in ac.relevant("where will the next winter olimpics be held", "1994")[1]
    assert ac.relevant("Are both magazines British publications?", "Yes")[0]
    assert not ac.relevant("Are both magazines British publications?", "Allen Metz")[0]
    assert ac.relevant("How many residents does Medra have?", "about 300")[0]
    assert not ac.relevant("When was the bridge designed?", "Tomas Vell")[0]
    assert ac.relevant("Is Corran or Hartmoor larger?", "Corran")[0]
    assert not ac.relevant("Who wrote the book?", "Yes")[0]
    assert ac.asked_kind("Johnnycake >> inception") == "date"


def test_a_headline_no_supported_sentence_states_is_never_verified():
    s = [("Don Hall is an American film director.", ["S1"], True)]
    r = result("Don Hall was born in California", s)
    ok, why = ac.stated(r, verdicts(s))
    assert not ok and why == "no supported sentence states 'Don Hall was born in California'"
    with llm.use_model(scripted_answer("Don Hall was born in California")):   # even when the passages agree
        checked = ac.check(r, verdicts(s), cal=CAL)
    assert checked["status"] == "supported" and checked["reasons"][0].startswith("no supported sentence states")


def test_verified_needs_the_calibrated_score_and_a_stated_answer():
    s = [("Big Stone Gap was directed by Adriana Trigiani.", ["S2"], True)]
    r = result("Adriana Trigiani", s)
    with llm.use_model(scripted_answer("Adriana Trigiani")):
        checked = ac.check(r, verdicts(s), cal=CAL)
        uncalibrated = ac.check(r, verdicts(s), cal=None)
    assert checked["status"] == "verified" and checked["score"] >= CAL["threshold"]
    assert checked["parts"] == {"stated": True, "relevant": True, "agreed": True, "their_answer": "Adriana Trigiani"}
    assert uncalibrated["status"] == "supported" and "no calibration" in uncalibrated["reasons"][-1]
    with llm.use_model(scripted_answer("Don Hall")):   # the passages give another answer: the score falls short
        other = ac.check(result("Adriana Trigiani", s, "Who made Big Stone Gap?"), verdicts(s), cal=CAL)
    assert other["status"] == "supported" and "answer 'Don Hall'" in " ".join(other["reasons"])
    assert "below the threshold" in other["reasons"][-1]


def test_an_answer_on_a_route_never_verified_says_so(monkeypatch):
    monkeypatch.setattr(ac, "multi_hop", lambda question: 0.9)   # the router reads it as two hops
    s = [("Big Stone Gap was directed by Adriana Trigiani.", ["S2"], True)]
    with llm.use_model(scripted_answer("Adriana Trigiani")):
        checked = ac.check(result("Adriana Trigiani", s), verdicts(s), cal={**CAL, "thresholds": {"multi": 1.01}})
    assert checked["status"] == "supported" and "multi-hop answer is never verified" in checked["reasons"][-1]


def test_sources_that_answer_nothing_say_so():
    s = [("Don Hall is an American film director.", ["S1"], False)]
    assert ac.check(result("Don Hall", s), verdicts(s), cal=CAL)["status"] == "unanswered"
    assert ac.check({**result("x", s), "idk": True}, verdicts(s), cal=CAL)["status"] == "idk"


def test_the_chain_is_read_in_the_order_the_sentences_cite_it():
    s = [("Big Stone Gap was directed by Adriana Trigiani.", ["S2"], True), ("Hall grew up in Glenwood.", ["S1"], True)]
    source = ac.chain_source(result("Glenwood", s), verdicts(s))
    assert source.index("Big Stone Gap is") < source.index("Don Hall is")


def test_the_threshold_keeps_the_corrected_precision_on_dev():
    rows = [{"features": {"stated": 1.0}, "right": i >= 8, "score_fit": i / 40} for i in range(40)]
    t = ace.choose_threshold(rows, 0.9)   # the 8 lowest are wrong: (wrong + 1) / (n + 1) <= 0.1 from the 7th up
    assert t == 6 / 40 and ace.precision_at(rows, t) == (34, 32)
    assert ace.choose_threshold([{"features": {"stated": 1.0}, "right": False, "score_fit": 0.9}], 0.9) > 1


def test_each_pattern_keeps_the_target_on_its_own():
    good = [{"features": {"stated": 1.0}, "pattern": "a", "right": True, "score_fit": i / 40} for i in range(40)]
    mixed = [{"features": {"stated": 1.0}, "pattern": "b", "right": i >= 20, "score_fit": i / 40} for i in range(40)]
    # pooled, 17/40 keeps (wrong + 1) / (n + 1) <= 0.1 (3 wrong of 46); pattern b alone first does at 19/40
    assert ace.lowest_threshold(good + mixed, 0.9) == 17 / 40
    assert ace.choose_threshold(good + mixed, 0.9) == 19 / 40 == ace.choose_threshold(mixed, 0.9)


def test_a_chain_is_linked_when_it_starts_at_the_question_and_reaches_the_stating_passage():
    q = "Where did the director of Big Stone Gap grow up?"
    film = {"id": "S2", "title": "Big Stone Gap", "text": "Big Stone Gap is a 2014 film directed by Don Hall."}
    other = {"id": "S3", "title": "Ames", "text": "Ames is a city in Iowa. It has a university."}
    hall = PASSAGES[0]
    s = [("Big Stone Gap was directed by Don Hall.", ["S2"], True), ("Don Hall grew up in Glenwood.", ["S1"], True)]
    r = {**result("Glenwood", s, q), "passages": [hall, film, other]}
    assert ac.linked(r, verdicts(s))          # S2 names the film and Don Hall, S1's title: A leads to B
    s2 = [("Big Stone Gap is a 2014 film.", ["S2"], True), ("Ames is a city in Iowa.", ["S3"], True)]
    assert not ac.linked({**result("Iowa", s2, q), "passages": [hall, film, other]}, verdicts(s2))


def test_a_question_that_names_no_subject_leaves_the_link_unknown():
    s = [("The next games are in Milan.", ["S1"], True)]
    assert ac.linked(result("Milan", s, "where will the next winter olimpics be held"), verdicts(s)) == 0.5


def test_the_threshold_is_chosen_on_scores_the_row_never_trained():
    rows = [{"id": f"q{i}", "features": {"stated": 1.0, "agreed": float(i % 3 > 0), "relevant": float(i % 5 > 0)},
             "right": (i % 3 > 0) != (i % 7 == 0)} for i in range(60)]
    names = sorted(rows[0]["features"])
    before = ace.cross_fitted(rows, names)
    flipped = [dict(r, right=not r["right"]) if r["id"] == "q9" else r for r in rows]
    after = ace.cross_fitted(flipped, names)
    i = 9
    assert after[i] == before[i]                 # its own label did not move its score
    assert any(a != b for j, (a, b) in enumerate(zip(after, before)) if j != i)   # it trained the other folds
    assert len({ace.fold_of(f"q{j}") for j in range(60)}) == ace.FOLDS
    cal = ace.fit([dict(r) for r in rows], 0.9)
    assert cal["threshold_from"] in ("in-sample", "cross-fitted") and 0 < cal["threshold"] <= 1.01
    assert set(cal["held_out_dev"]) == {"in-sample", "cross-fitted"}


def test_each_route_has_its_own_threshold_and_a_route_that_keeps_no_precision_is_never_verified():
    # single route: agreed answers are right; multi route (router P(multi) > 0.5): agreed ones are right 3 times in 5
    rows = [{"id": f"q{i}", "features": {"stated": 1.0, "agreed": float(i % 2), "multi_hop": float(i >= 60)},
             "right": bool(i % 2) and (i < 60 or i % 5 < 3)} for i in range(120)]
    cal = ace.fit([dict(r) for r in rows], 0.9)
    assert cal["thresholds"]["multi"] > 1 and cal["thresholds"]["single"] <= cal["threshold"]
    agreed = {"stated": 1.0, "agreed": 1.0, "relevant": 1.0}
    assert ac.passes({**agreed, "multi_hop": 0.0}, cal) and not ac.passes({**agreed, "multi_hop": 1.0}, cal)
    assert ac.threshold({**agreed, "multi_hop": 0.9}, CAL) == CAL["threshold"]   # a calibration with one threshold
    assert ac.passes(agreed, CAL)   # a row made before the router's feature: the one-hop route


def test_the_probe_reads_the_probability_of_the_answer_value_only():
    from experiments.answer_logprob_probe import answer_logprobs
    pairs = [('{"sentences": [], "', -0.1), ('answer', -0.2), ('": "', -0.3), ('Tom', -1.0), ('as Ve', -0.5),
             ('ll', -0.3), ('"}', -2.0)]
    assert answer_logprobs(pairs) == pytest.approx((-0.6, -1.0))
    assert answer_logprobs([('{"answer": ""}', -0.1)]) is None


def test_the_ptrue_probe_puts_the_answer_as_a_claim_to_the_cited_chain():
    from experiments import answer_ptrue_probe as probe
    s = [("Big Stone Gap was directed by Adriana Trigiani.", ["S2"], True), ("Hall grew up in Glenwood.", ["S1"], True)]
    r, v = result("Adriana Trigiani", s), verdicts(s)
    row = {"features": {"stated": 1.0}, "verdicts": v}
    model = llm.ScriptedModel([[('{"verdict": "', -0.01), ("YES", -0.2), ('"}', -0.01)]])
    with llm.use_model(model):
        p = probe.p_true(row, r)
        assert probe.p_true({**row, "features": {"stated": 0.0}}, r) == 0.0   # never verified: not asked
        assert probe.p_true(row, r, cached_only=True) == p                   # the reply is cached
    assert p == pytest.approx(0.8187, abs=1e-3) and len(model.calls) == 1
    user = model.calls[0][0][-1]["content"]
    assert user.index("Big Stone Gap is") < user.index("Don Hall is")    # the chain, bridge first
    assert user.endswith('Claim: The answer to "Who directed the 2014 film Big Stone Gap?" is Adriana Trigiani.')
    assert "Don Hall" in probe.source_of(row, r, "prompt") and probe.source_of(row, r, "prompt").startswith("Don Hall")


def test_a_code_answers_a_which_question_of_any_noun():
    """issue 59 removed the rule that refused a code for "which building": it marked 8 of the catalogue's own gold
    answers the wrong kind, and no question of golden.json or debian/ has a code for its answer."""
    assert ac.relevant("In which building is the office of Dr Teo Mensah?", "KST 206")[0]
    assert ac.relevant("In which room is MUS 320 taught?", "KST 112")[0]
    assert not ac.relevant("In which building is ARC 120 taught?", "ARC 120")[0]   # a code the question names


def test_an_answer_that_repeats_the_questions_code_answers_nothing_and_a_range_holds_its_ends():
    assert not ac.relevant("In which building is ARC 120 taught?", "ARC 120 Drawing and Representation")[0]
    assert "repeats ARC 120" in ac.relevant("In which building is ARC 120 taught?", "ARC 120 Drawing")[1]
    assert ac.relevant("Which other course does the instructor of ARC 120 teach?", "ARC 240")[0]
    assert ac.relevant("Is ARC 120 or ARC 240 taught in spring?", "ARC 240")[0]   # a choice names its options
    assert answers.right("09:00-10:30", {"answer": "09:00", "aliases": []})
    assert not answers.right("09:30-10:30", {"answer": "09:00", "aliases": []})
