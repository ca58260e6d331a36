"""lab/spans.py: the short answer as the span asked for, the worked-example guard and citation re-attribution.
Known answers on hand-written sentences in the shapes of several kinds of folder; no model, no I/O."""
import pytest

from layers import spans


@pytest.mark.parametrize("question, answer, span", [
    ("Where is the office of the instructor of DSC 330?",
     "The office of the instructor who teaches DSC 330 is in HAL 326.", "HAL 326"),
    ("Which room is the lecturer of MAR/2140 in?", "The lecturer of MAR/2140 is in Morvath Tower C-12.",
     "Morvath Tower C-12"),
    ("Who teaches GEO 205?", "GEO 205 is taught by Dr Caspar Wendeborn.", "Dr Caspar Wendeborn"),
    ("On what date is the examination of MTH 140?", "The examination of MTH 140 is on 14 January 2027.",
     "14 January 2027"),
    ("When are the office hours of the instructor of AST 210?",
     "The office hours of Prof. Casimir Odunsi-Hale are Mondays 10:00 to 12:00.", "Mondays 10:00 to 12:00"),
    ("How many seats does the room where DSC 350 is taught have?", "The room where DSC 350 is taught has 120 seats.",
     "120"),
    ("In which building is the office of Dr Ottoline Brisk-Amadi?",
     "Her office is in ARL 210, in the Ashby Rock Laboratory.", "Ashby Rock Laboratory"),
    ("What is the telephone extension of the instructor of MAR 270?", "The extension of Dr Orrin Castellane is 4615.",
     "4615"),
    ("Scott Howell has worked with the mayor of what city?",
     "Scott Howell has worked with the mayor of Salt Lake City.", "Salt Lake City"),
])
def test_a_sentence_answer_becomes_the_span_the_question_asks_for(question, answer, span):
    assert spans.answer_span(question, answer) == span


@pytest.mark.parametrize("question, answer", [
    ("Who teaches GEO 205?", "Dr Caspar Wendeborn"),                                 # already short
    ("What do E. B. White and Dan Masterson have in common?", "They are both American writers."),   # not a span
    ("Is the Lantern cafe in Marrick Hall?", "Yes, the Lantern cafe is in Marrick Hall."),          # yes/no
    ("What role did Ed Roland play in the band?", "Ed Roland was the lead vocalist of Collective Soul."),
    ("Which cafe is in the same building as HSC 101?", "The Lantern cafe is in Marrick Hall, like HSC 101."),  # two
])
def test_no_span_is_guessed(question, answer):
    assert spans.answer_span(question, answer) == answer


def test_the_worked_example_is_caught_only_when_no_passage_names_it():
    names = ("Ashford Bridge", "Tomas Vell", "Hartmoor")
    assert spans.from_example("Hartmoor", names, [{"text": "Nothing about villages."}])
    assert not spans.from_example("Hartmoor", names, [{"text": "She was born in Hartmoor in 1901."}])
    assert not spans.from_example("Corran", names, [])


def test_a_sentence_is_re_cited_to_the_one_passage_that_states_it():
    passages = [{"id": "S1", "text": "All Principals report directly to our CTO, who sets the roadmap."},
                {"id": "S2", "text": "Principals lead product design."}]
    sentences = [{"text": "All Principals report directly to our CTO.", "cites": ["S2"]},
                 {"text": "Principals lead product design.", "cites": ["S2"]},          # stated by its own cite
                 {"text": "All Principals report directly to our CTO.", "cites": []}]   # uncited: left alone
    out, fixed = spans.recite(sentences, passages)
    assert [s["cites"] for s in out] == [["S1"], ["S2"], []]
    assert fixed == [{"sentence": 0, "from": ["S2"], "to": ["S1"]}]
    assert spans.recited_line(fixed[0]) == "citation corrected in sentence 1: the model cited [S2]; [S1] states it"
    twice = passages + [{"id": "S3", "text": "All Principals report directly to our CTO."}]
    assert spans.recite(sentences[:1], twice)[1] == []   # two passages state it: not ours to choose
