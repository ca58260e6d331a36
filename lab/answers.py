"""Comparing answers without a model: SQuAD normalisation, EM/F1, whether two answers agree, whether a text
names an answer, and which names a question is about. Shared by the judge, the disputes check, the pair
builder and every evaluation; no model call, no I/O.

    normalize_answer('The  Eiffel Tower!')                       -> 'eiffel tower'
    answers_match('the engineer Tomas Vell', 'Tomas Vell')       -> True  (contained, or token F1 >= 0.5)
    answers_match('UK', 'United Kingdom')                         -> True  (an acronym of the other)
    stated_fuller('1967', 'August 16, 1967', source)             -> True when the source says 'August 16, 1967'
    subject_names('In which valley is Brokenhythe wine produced?') -> ['Brokenhythe']
"""
import re
import string
from collections import Counter

NOT_STATED = {"not stated", "not given", "not mentioned", "unknown", "none", ""}
NAME = re.compile(r"\b[A-Z][\w'’-]*(?:[ \t]+(?:of|the|de|da|von|van|and|&)?[ \t]*[A-Z][\w'’-]*)*")  # one line
COMMON = {"the", "a", "an", "in", "on", "he", "she", "it", "his", "her", "they", "their", "this", "that",
          "after", "before", "during", "from", "as", "at", "by", "for", "with", "its", "there", "when", "while"}
ASKING = COMMON | {"who", "what", "which", "when", "where", "why", "how", "whose", "whom", "is", "was", "are",
                   "were", "did", "does", "do", "name", "list", "give", "tell", "many", "much", "both"}


def normalize_answer(s):
    """SQuAD: 'The  Eiffel Tower!' -> 'eiffel tower'"""
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def token_f1(pred, gold):
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g:
        return float(p == g)
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def exact_match(pred, item):
    """1.0 when the normalised prediction equals the answer or an alias."""
    golds = [item["answer"]] + list(item.get("aliases", []))
    return float(any(normalize_answer(pred) == normalize_answer(g) for g in golds))


def f1(pred, item):
    """Best SQuAD token F1 over the answer and its aliases. ('Tomas Vell', {'answer': 'Vell'}) -> 0.667"""
    return max(token_f1(pred, g) for g in [item["answer"]] + list(item.get("aliases", [])))


def numbers_in(s):
    return set(re.findall(r"\d+", s))


RIGHT_F1 = 0.8   # a looser answer is right only this close: at 0.5, "two weeks" was right for "6 weeks"


def right(answer, item):
    """The lab's label for a right answer: the gold answer or an alias is in it as whole words (SQuAD-normalised),
    or its token F1 with one is at least RIGHT_F1.
    ('the engineer Tomas Vell', {'answer': 'Tomas Vell'}) -> True; ('two weeks', {'answer': '6 weeks'}) -> False
    (F1 0.5); ('Engineering Building', {'answer': 'Halloran Building'}) -> False; ('09:00-10:30', {'answer':
    '09:00'}) -> True (a range's ends are whole words: normalising alone glues it into '09001030')"""
    if not answer:
        return False
    a = f" {normalize_answer(answer)} {spaced(answer)} "
    golds = [g for g in [item["answer"]] + list(item.get("aliases", [])) if g]
    return any(f" {normalize_answer(g)} " in a or f" {spaced(g)} " in a or token_f1(answer, g) >= RIGHT_F1
               for g in golds if normalize_answer(g))


def acronym(a, b):
    """One answer is the initials of the other: ('U.S.', 'United States') -> True, ('UK', 'Ukraine') -> False"""
    a, b = normalize_answer(a).split(), normalize_answer(b).split()
    return any(len(x) == 1 and len(y) >= 2 and x[0] == "".join(w[0] for w in y) for x, y in ((a, b), (b, a)))


def answers_match(said, claimed, question=""):
    """Whether the source's answer and the claim's agree: SQuAD-normalised equal, one inside the other, one the
    acronym of the other, or token F1 >= 0.5 over the words the question does not already say (the answer's
    type: 'Which lake ...?' makes 'Lake' no evidence of agreement). ('the engineer Tomas Vell', 'Tomas Vell')
    -> True; ('Corran', 'Tomas Vell') -> False; ('Lake Anvery', 'Lake Solitude', 'Which lake does Cresswell
    Dam hold back?') -> False (without the question: token F1 0.5, True)"""
    s, c = normalize_answer(said), normalize_answer(claimed)
    if s in NOT_STATED or not c:
        return False
    if numbers_in(s) != numbers_in(c) and re.search(r"\d", c):
        return False  # 'June 6' is not 'June 30', whatever their shared words
    inside = f" {c} " in f" {s} " or f" {s} " in f" {c} "
    if s == c or inside or acronym(said, claimed):
        return True
    asked = set(normalize_answer(question).split())
    s_new, c_new = (" ".join(w for w in t.split() if w not in asked) for t in (s, c))
    return token_f1(*((s_new, c_new) if s_new and c_new else (s, c))) >= 0.5


def stated_fuller(said, claimed, source):
    """The claim is a fuller form of the source's own answer that the source states word for word: they share a
    name word (not a common one), every number of the source's answer is in the claim, and the claim occurs in
    the source as it stands. ('1967', 'August 16, 1967', '... on August 16, 1967 ...') -> True;
    ('President Mohamud', 'Hassan Sheikh Mohamud', '... elected Hassan Sheikh Mohamud ...') -> True"""
    s, c = normalize_answer(said).split(), normalize_answer(claimed).split()
    if not s or not c or f" {' '.join(c)} " not in f" {normalize_answer(source)} ":
        return False
    return numbers_in(" ".join(s)) <= numbers_in(" ".join(c)) and bool((set(s) & set(c)) - COMMON)


def spaced(text):
    """normalize_answer with hyphens, dashes and slashes as spaces first: 'Mecklenburg-Schwerin' -> 'mecklenburg
    schwerin', '09:00-10:30' -> '0900 1030' (normalising alone glues them into one word)."""
    return normalize_answer(re.sub(r"[-–/]", " ", text))


def named_in(text, answer, share=0.5):
    """At least `share` of the answer's words occur in the text.
    ('... engineer Tomas Vell ...', 'Tomas Vell') -> True"""
    words, found = spaced(answer).split(), set(spaced(text).split())   # 'Mecklenburg-Schwerin' names Mecklenburg
    return bool(words) and sum(w in found for w in words) / len(words) >= share


def subject_names(question):
    """The names a question is about, the words a question asks with left off, 'X and Y' as two names:
    'In which valley is Brokenhythe wine produced?' -> ['Brokenhythe'];
    'Johnnycake, West Virginia >> located in the administrative territorial entity'
        -> ['Johnnycake', 'West Virginia']"""
    found = []
    for m in NAME.finditer(question.split(">>")[0]):
        for part in re.split(r"[ \t]+(?:and|&)[ \t]+", m.group().strip(" .,'’")):
            words = part.split()
            while words and words[0].lower() in ASKING:
                words = words[1:]
            if words and " ".join(words) not in found:
                found.append(" ".join(words))
    return found


def about(question, text):
    """Whether a text names every name the question is about (true when the question has none): a paragraph
    on another Jiménez, or on another river of the same country, is not about the question's subject."""
    return all(named_in(text, n, share=1.0) for n in subject_names(question))
