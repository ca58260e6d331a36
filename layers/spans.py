"""Layer on week 3's generate(): what the lab makes of the model's reply before anyone reads it: the short answer as
the span the question asks for, a guard against answers copied from the prompt's worked example, and citations moved
to the passage that states a sentence word for word. No model call, no I/O. `finish(result)` applies them to any
generate()-shaped result (assembly.py wraps every pattern whose answer generate() writes).

    python -m experiments.span_eval results/answer_check.json golden.json   # EM/F1 of cached answers, before/after

A 1.5B model often writes its "short" answer as a sentence that restates the question ("The office of the
instructor who teaches DSC 330 is in HAL 326."). The user asked for a room, and exact match reads 0. `answer_span`
takes the one thing the sentence adds that the question does not already say, of the kind the question asks for:

    answer_span('Where is the office of the instructor of DSC 330?',
                'The office of the instructor who teaches DSC 330 is in HAL 326.')      -> 'HAL 326'
    answer_span('Who teaches GEO 205?', 'GEO 205 is taught by Dr Caspar Wendeborn.')  -> 'Dr Caspar Wendeborn'
    answer_span('On what date is the examination of MTH 140?',
                'The examination of MTH 140 is on 14 January 2027.')                  -> '14 January 2027'
    answer_span('Who teaches GEO 205?', 'Dr Caspar Wendeborn')                        -> unchanged (already short)

`spelled_out` names what a code stands for when the question asks for a thing that codes do not number: 'KST 206'
for "In which building is the office of X?" becomes 'Kestle Hall', when a shown passage holds 'KST 206' and defines
its letters ("Kestle Hall (code KST) is the music building"); the defining sentence joins the answer, cited.

answer_span changes nothing when the answer is already short, when the question asks for an explanation, a
comparison or a yes/no (the sentence is the answer), or when more than one candidate of the kind remains: it never
guesses. Not handled: answers in other languages; spans with lower-case words inside ("the Lantern cafe" gives
'Lantern'); a code whose letters are defined only in a table ('KST | Kestle Hall'), not in brackets.
"""
import re

from generate import EXAMPLE_NAMES, IDK, is_idk
from lab.answers import COMMON, named_in, normalize_answer
from lab.links import CODE, codes, normalize

SHORT_WORDS = 5          # an answer of at most this many words, not a sentence, is kept as the model wrote it
MONTH = ("January|February|March|April|May|June|July|August|September|October|November|December|"
         "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
DAY = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
DAYS = rf"(?:{DAY})s?(?:,? (?:and )?(?:{DAY})s?)*"                  # 'Mondays', 'Tuesday and Friday'
HOURS = r"\d{1,2}:\d{2}(?:\s*(?:-|to)\s*\d{1,2}:\d{2})?"            # '14:00', '10:00 to 12:00'
SHAPES = {   # what a span of each kind looks like; a code is letters and digits in one token or two (HAL 104, C-12)
    "date": re.compile(rf"\b(?:\d{{1,2}} (?:{MONTH})\.? \d{{4}}|(?:{MONTH})\.? \d{{1,2}},? \d{{4}}|"
                       rf"(?:{MONTH}) \d{{4}}|\d{{1,2}} (?:{MONTH})|(?:{DAYS},? )?{HOURS}|{DAYS}|"
                       r"\b1\d{3}\b|\b20\d{2}\b)"),
    "number": re.compile(r"(?<![\w/-])[£$€]?\d[\d,.]*%?"),
    "code": re.compile(r"\b[A-Z][A-Za-z]{0,6}(?:[ /-]|\b)?[A-Z]?\d{1,5}[A-Za-z]?\b(?:[/-]\d+)?"),
    "name": re.compile(r"\b(?:(?:Dr|Prof|Mr|Mrs|Ms|Sir|St)\.? )?[A-Z][\w'’-]*"
                       r"(?:(?: (?:of|the|de|da|von|van|and|&))* [A-Z0-9][\w'’.-]*)*"),
}
WHAT = r"\b(?:what|which)\s+(?:(?:is|are|was|were)\s+)?(?:(?:the|its|their|his|her|a|an)\s+)?(?:[a-z-]+\s+)?"
ASKS = [   # (what the question asks with, the kinds of span that answer it, most likely first), first match wins
    (r"\bhow (many|much|long|old|tall|high|big|far|large)\b", ("number",)),
    (rf"^when\b|{WHAT}(year|date|day|days|time|month|term|hours)\b", ("date",)),
    (rf"^(who|whom|whose)\b|{WHAT}(person|man|woman|lecturer|instructor|teacher|manager|director)\b", ("name",)),
    (rf"{WHAT}(room|office|number|code|extension)\b", ("code", "number")),
    (rf"{WHAT}(building|city|town|place|country|campus|site|department|street|county|state)\b", ("name", "code")),
    (r"^where\b", ("code", "name")),
    (r"\b(what|which)\b", ("code", "name", "date", "number")),
]
NOT_A_SPAN = re.compile(r"^\s*(how (is|are|was|were|do|does|did)\b|why\b|what (do|does|did)\b.*\bin common\b|"
                        r"(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b)|"
                        r"\b(what|which) (role|kind|type|sort|genre|position|profession|job|occupation|relation)", re.I)
# what a code ('KST 206', 'MAR/2140', 'C-12') can name: "In which room" takes one, "In which building" does not
CODE_NOUNS = {"room", "office", "course", "module", "class", "code", "number", "unit", "reference", "laboratory",
              "lab", "studio", "seat", "page", "section", "form", "level", "grade", "version", "model", "extension"}
ASKED_NOUN = re.compile(r"^(?:in |at |from |to |on |for )?(?:what|which) (?:other |one |two |three )?(\w+)")
LONG_FORM_WORDS = 6      # longest name looked for before a parenthesised abbreviation ("Kestle Hall (code KST)")
OPENERS = {"The", "A", "An", "It", "He", "She", "They", "This", "That", "Its", "His", "Her", "Their", "In", "On",
           "At", "By", "For", "From", "With", "Both", "Yes", "No", "All", "Each", "Every", "Our", "Your", "We", "You"}


def asked_kinds(question):
    """The kinds of span a question asks for, () when it asks for no span. 'Who teaches X?' -> ('name',)"""
    q = question.strip()
    if NOT_A_SPAN.search(q):
        return ()
    low = q.lower()
    return next((kinds for asks, kinds in ASKS if re.search(asks, low)), ())


def candidates(text, kind):
    """Spans of one kind in a text, in order, a sentence opener dropped from a name ('The Lantern' -> 'Lantern'); a
    code keeps the name it is part of ('in Morvath Tower C-12' -> 'Morvath Tower C-12')."""
    def names():
        for m in SHAPES["name"].finditer(text):
            words = m.group().strip(" .,;:").split()
            while words and words[0] in OPENERS:
                words = words[1:]
            if words:
                yield m.start() + m.group().index(words[0]), " ".join(words)
    if kind == "name":   # 'HAL 104' is a code, not a name
        return [s for _, s in names() if not SHAPES["code"].fullmatch(s)]
    if kind == "code":
        named = [(at, s) for at, s in names() if re.search(r"\d", s) and SHAPES["code"].search(s)]
        inside = lambda m: any(at <= m.start() < at + len(s) for at, s in named)
        found = named + [(m.start(), m.group()) for m in SHAPES["code"].finditer(text) if not inside(m)]
        return [s.strip(" .,;:") for _, s in sorted(found)]
    return [m.group().strip(" .,;:") for m in SHAPES[kind].finditer(text)]


def is_sentence(answer):
    """An answer written as a sentence: more than SHORT_WORDS words, or a full stop after a lower-case word."""
    return len(answer.split()) > SHORT_WORDS or bool(re.search(r"[a-z]\.\s*$", answer) and len(answer.split()) > 2)


def answer_span(question, answer):
    """The one span of the asked kind that the answer adds to the question; the answer itself otherwise."""
    kinds = asked_kinds(question)
    if not kinds or not is_sentence(answer):
        return answer
    asked = set(normalize_answer(question).split()) | COMMON
    for kind in kinds:   # a candidate must add a word the question does not say ('All Principals' adds none)
        new = [c for c in dict.fromkeys(candidates(answer, kind)) if set(normalize_answer(c).split()) - asked]
        new = [c for c in new if not any(c != o and c in o for o in new)]   # 'Caspar Wendeborn' inside 'Dr Caspar ...'
        if len(new) == 1:
            return new[0]
        if new:
            return answer   # two candidates of the kind: not ours to choose
    return answer


def from_example(answer, example_names, passages):
    """Whether the answer names something of the prompt's worked example that no passage names: a small model with
    passages that do not answer can copy the example ('Hartmoor'). ('Hartmoor', ['Hartmoor', 'Tomas Vell'], [])
    -> True"""
    hit = [n for n in example_names if named_in(answer, n, 1.0)]
    return bool(hit) and not any(named_in(p.get("text", ""), n, 1.0) for n in hit for p in passages)


def _words(text):
    return [w for w in normalize_answer(text).split() if len(w) > 2 or w.isdigit()]


def stated_share(sentence, passage_text):
    """The share of a sentence's words (of 3+ letters, or numbers) that the passage has, in [0, 1].
    ('All Principals report to our CTO.', '... All Principals report directly to our CTO ...') -> 1.0"""
    words, have = _words(sentence), set(_words(passage_text))
    return sum(w in have for w in words) / len(words) if words else 0.0


RECITE_STATES = 0.9        # the passage that states the sentence has this share of its words or more...
RECITE_CITED_BELOW = 0.6   # ...while every passage it cites has less than this


def recite(sentences, passages):
    """Sentences whose cited passages do not state them, but one other shown passage does word for word, cite that
    passage instead: -> (sentences, [{"sentence": n, "from": [ids], "to": [id]}]). A sentence with no citation is left
    alone (uncited is a finding of its own), and so is one that two passages state equally (not ours to choose)."""
    out, fixed = [], []
    text = {p["id"]: p.get("text", "") for p in passages}
    for n, s in enumerate(sentences):
        cited = [c for c in s["cites"] if c in text]
        stated = [stated_share(s["text"], text[c]) for c in cited]
        if stated and len(_words(s["text"])) >= 3 and max(stated) < RECITE_CITED_BELOW:
            shares = sorted(((stated_share(s["text"], t), i) for i, t in text.items() if i not in cited), reverse=True)
            if shares and shares[0][0] >= RECITE_STATES and (len(shares) == 1 or shares[1][0] < shares[0][0]):
                fixed.append({"sentence": n, "from": cited, "to": [shares[0][1]]})
                s = {**s, "cites": [shares[0][1]]}
        out.append(s)
    return out, fixed


def recited_line(fix):
    """'citation corrected in sentence 2: the model cited [S2]; [S1] states it'"""
    was = "".join(f"[{c}]" for c in fix["from"])
    return f"citation corrected in sentence {fix['sentence'] + 1}: the model cited {was}; [{fix['to'][0]}] states it"


def code_for_noun(question, answer, whole=True):
    """(asked noun, code) when the answer is a code and the question asks "which <noun>" of a noun that codes do not
    number (CODE_NOUNS); None otherwise. whole=False takes a code the answer opens with too ('PNC 9 Office 1').
    ('In which building is the office of X?', 'KST 206') -> ('building', 'KST 206');
    ('In which room is MUS 320 taught?', 'KST 112') -> None"""
    noun = ASKED_NOUN.match(question.strip().lower())
    code = (CODE.fullmatch if whole else CODE.match)(answer.strip())
    if noun and code and noun.group(1).rstrip("s") not in CODE_NOUNS:
        return noun.group(1), code.group()
    return None


def abbreviates(short, long):
    """Schwartz & Hearst's test (PSB 2003) of a long form: it holds the short form's letters in order, read from the
    end, and the first letter starts one of its words. ('KST', 'Kestle Hall') -> True; ('KST', 'Weald House')
    -> False"""
    s, t = short.lower(), long.lower()
    j = len(t) - 1
    for i in range(len(s) - 1, -1, -1):
        while j >= 0 and (t[j] != s[i] or (i == 0 and j > 0 and t[j - 1].isalnum())):
            j -= 1
        if j < 0:
            return False
        j -= 1
    return True


def spelled_out(question, answer, passages):
    """(name, passage id, the sentence that defines it) when code_for_noun reads the answer as a code of the wrong
    kind, and a shown passage holds that code, says the asked noun and defines the code's letters ("Kestle Hall (code
    KST) is the music building"; the shortest capitalised run before the brackets that abbreviates() them); else
    None. Model-free: a 1.5B model asked "In which building is KST 206?" answered a code again."""
    got = code_for_noun(question, answer, whole=False)
    letters = got and re.match(r"[A-Z]{2,6}(?![a-z])", got[1])
    if not letters:
        return None
    noun, code, letters = got[0], got[1], letters.group()
    defined = re.compile(rf"\((?:[a-z]+\s+)?{letters}\)")
    for p in passages:
        text = p.get("text", "")
        if normalize(code) not in codes(text) or noun[:5] not in text.lower():
            continue
        for sentence in (s for line in text.splitlines() for s in re.split(r"(?<=[.!?])\s+", line)):
            for m in defined.finditer(sentence):
                words = sentence[:m.start()].split()[-LONG_FORM_WORDS:]
                for n in range(1, len(words) + 1):
                    name = " ".join(words[-n:])
                    if name[:1] == letters[0] and abbreviates(letters, name) \
                            and all(w[:1].isupper() or w in ("of", "the", "and") for w in words[-n:]):
                        return name, p["id"], sentence.strip()
    return None


def spell(question, answer, sentences, passages):
    """(answer, sentences, spelled) with spelled_out applied: the name for the code, the defining sentence added
    (cited to its passage) unless the model wrote it, and spelled = {sentence, code, name, source}, or None."""
    named = spelled_out(question, answer, passages)
    if not named:
        return answer, sentences, None
    name, source, quote = named
    said = [s["text"] for s in sentences]
    sentences = sentences if quote in said else sentences + [{"text": quote, "cites": [source]}]
    return name, sentences, {"sentence": (said + [quote]).index(quote), "code": answer, "name": name, "source": source}


def spelled_line(spelled):
    """'the model answered 'KST 206', a code; [S3] spells out its letters: Kestle Hall (sentence 3 quotes it)'"""
    return (f"the model answered '{spelled['code']}', a code; [{spelled['source']}] spells out its letters: "
            f"{spelled['name']} (sentence {spelled['sentence'] + 1} quotes it)")


def finish(result):
    """A generate()-shaped result with these rules applied: citations re-cited (recite), an answer that names the
    worked example's names which no passage names made "I don't know", the short answer cut to the span asked for
    (answer_span) and a code spelled out (spell). Adds `written` (the short answer as the model wrote it), `recited`
    and `spelled` (None mostly)."""
    question, shown, answer = result["question"], result["passages"], result["answer"]
    sentences, recited = recite(result["sentences"], shown)   # a sentence S1 states word for word but S2 is cited
    written, spelled, idk = answer, None, result["idk"] or from_example(answer, EXAMPLE_NAMES, shown)
    if idk:
        answer, sentences = IDK, [s for s in sentences if not is_idk(s["text"])]
    else:
        answer = answer_span(question, answer)   # 'The office of ... is in HAL 326.' -> 'HAL 326'
        answer, sentences, spelled = spell(question, answer, sentences, shown)   # 'KST 206' for a building
    text = " ".join(f"{s['text']}{''.join(f' [{c}]' for c in s['cites'])}" for s in sentences) or answer
    return {**result, "answer": answer, "written": written, "text": text, "sentences": sentences,
            "recited": recited, "spelled": spelled, "idk": idk}
