"""lab/answers.py: comparing answers without a model (no engine, no I/O)."""
from lab.answers import about, acronym, answers_match, stated_fuller, subject_names


def test_subject_names_leave_off_the_asking_words():
    assert subject_names("In which valley is Brokenhythe wine produced?") == ["Brokenhythe"]
    assert subject_names("Johnnycake, West Virginia >> located in the administrative territorial entity") \
        == ["Johnnycake", "West Virginia"]
    assert subject_names("who is captain miller") == []          # no name: every passage is asked
    assert about("Who built the Skarvel Viaduct?", "The viaduct at Skarvel has 14 arches.")
    assert not about("Who built the Skarvel Viaduct?", "The Skarvel road crosses the Brell by a ford.")
    assert subject_names("Are Marian Gold and Jung Eun-ji members of the same band?") == ["Marian Gold", "Jung Eun-ji"]


def test_acronyms_match_their_full_names_and_nothing_else():
    assert acronym("U.S.", "United States") and acronym("United Kingdom", "UK")
    assert not acronym("UK", "Ukraine") and not acronym("US", "US")
    assert answers_match("UK", "United Kingdom") and not answers_match("UN", "United Kingdom")


def test_a_fuller_answer_counts_only_when_the_source_states_it_word_for_word():
    source = "Louis Armstrong recorded it on August 16, 1967. President Mohamud was Hassan Sheikh Mohamud."
    assert stated_fuller("1967", "August 16, 1967", source)
    assert stated_fuller("President Mohamud", "Hassan Sheikh Mohamud", source)
    assert not stated_fuller("1967", "August 17, 1967", source)          # not in the source as it stands
    assert not stated_fuller("1968", "August 16, 1967", source)          # the source's number is not in the claim
    assert not stated_fuller("Louis Armstrong", "August 16, 1967", source)  # no shared name word


def test_a_word_the_question_already_says_is_no_agreement():
    # 'Lake' restates the answer type of 'Which lake ...?': two different lakes are two answers (the judge had passed
    # 'Lake Solitude' against a source that says 'Lake Anvery': token F1 0.5)
    q = "Which lake does Cresswell Dam hold back?"
    assert not answers_match("Lake Anvery", "Lake Solitude", q)
    assert answers_match("Lake Anvery", "Lake Solitude")                 # without the question: the old F1 rule
    assert answers_match("Lake Anvery", "the Lake Anvery reservoir", q)  # one inside the other still agrees
    assert answers_match("Richard Bach", "Richard David Bach", "Richard Wright or Richard Bach?")  # all words asked
