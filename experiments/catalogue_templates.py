"""Question templates over every course, instructor, programme, building and society of the made-up college
(experiments/catalogue_facts.py): the catalogue's golden questions beyond the hand-written ones of
catalogue_golden.py, in the seed's styles ("Who teaches the prerequisite of AST 310?").

Each template returns a golden item (catalogue_golden.item) or None where it does not apply (a course with two
prerequisites has no "the prerequisite"). A seeded draw per entity (`pick`) keeps a few templates of each entity,
so every course is asked about a little, not every course about everything; the same facts give the same draw.
"""
import random
from pathlib import Path

from experiments.catalogue_facts import (BUILDINGS, COURSES, INSTRUCTORS, PROGRAMMES, SOCIETIES, building_of, exams,
                                         person)
from lab.documents import doc_id

TWO_HOP_PER_COURSE = 2       # two-hop templates drawn per course
THREE_HOP_SHARE = 4          # one course in this many also gets a three-hop question
BUILDINGS_DOC = "buildings-and-rooms-pdf"


def did(name):
    return doc_id(Path(name))


def course_doc(code):
    return did(COURSES[code][10])


def staff_doc(key):
    return did(INSTRUCTORS[key][9])


def names(key):
    """The answer and aliases of a person: 'Imelda Varga-Thorne', ['Dr Imelda Varga-Thorne', 'Varga-Thorne']."""
    return INSTRUCTORS[key][0], [person(key), INSTRUCTORS[key][0].split()[-1]]


def item(question, answer, hops, aliases=()):
    """A golden item from its hops [(question, answer, doc)]; one hop is a single-hop question."""
    docs = list(dict.fromkeys(d for _, _, d in hops))
    return {"question": question, "answer": answer, "aliases": list(aliases), "supporting_docs": docs,
            "type": "multi" if len(hops) > 1 else "single", "hops": len(hops), "source": "catalogue",
            "decomposition": [{"question": q, "answer": a, "doc": d} for q, a, d in hops]}


def prereq(code):
    """The one prerequisite of a course, or None (none, or two: then 'the prerequisite' is not one course)."""
    pre = COURSES[code][7]
    return pre[0] if len(pre) == 1 else None


def seats(room):
    return next(str(r[2]) for b in BUILDINGS.values() for r in b[4] if r[0] == room)


def built(room):
    return next(str(b[1]) for b in BUILDINGS.values() for r in b[4] if r[0] == room)


# --- single-hop: one document says it -------------------------------------------------------------------------
def course_singles(code):
    c = COURSES[code]
    doc, one = course_doc(code), lambda q, a, aliases=(): item(q, a, [(q, a, doc)], aliases)
    pre = prereq(code)
    return [one(f"How many credits is {code} worth?", f"{c[1]} credits", [str(c[1])]),
            one(f"In which room is {code} taught?", c[3]),
            one(f"Who teaches {code}?", *names(c[2])),
            one(f"At what time do classes of {code} start?", c[5].split("-")[0]),
            one(f"In which term is {code} taught?", c[6]),
            one(f"What is the prerequisite of {code}?", pre) if pre else None]


def instructor_singles(key):
    i, doc = INSTRUCTORS[key], staff_doc(key)
    who = f"{i[1]} {i[0]}"
    one = lambda q, a: item(q, a, [(q, a, doc)])
    return [one(f"Where is the office of {who}?", i[3]),
            one(f"What is the telephone extension of {who}?", i[4]),
            one(f"In which year did {who} join the college?", str(i[7]))]


def programme_singles(key):
    p, doc = PROGRAMMES[key], did(PROGRAMMES[key][10])
    one = lambda q, a, aliases=(): item(q, a, [(q, a, doc)], aliases)
    return [one(f"How many students does the {p[0]} admit each year?", str(p[3])),
            one(f"When do applications to the {p[0]} close?", p[4]),
            one(f"Who directs the {p[0]}?", *names(p[1]))]


def building_singles(code):
    b = BUILDINGS[code]
    one = lambda q, a: item(q, a, [(q, a, BUILDINGS_DOC)])
    return [one(f"In which year was {b[0]} built?", str(b[1])),
            one(f"Who designed {b[0]}?", b[2]) if b[2] != "unknown" else None]


# --- two hops: a course page, then the page its code, instructor or room leads to -------------------------------
def course_two_hops(code):
    c, ex = COURSES, exams()
    who, room, doc = c[code][2], c[code][3], course_doc(code)
    i = INSTRUCTORS[who]
    by = (f"Who teaches {code}?", i[0], doc)
    rooms = (f"In which room is {code} taught?", room, doc)
    out = []
    pre = prereq(code)
    if pre:
        first = (f"What is the prerequisite of {code}?", pre, doc)
        name, aliases = names(c[pre][2])
        out += [item(f"Who teaches the prerequisite of {code}?", name, [first, ("Who teaches #1?", name,
                                                                              course_doc(pre))], aliases),
                item(f"In which room is the prerequisite of {code} taught?", c[pre][3],
                     [first, ("In which room is #1 taught?", c[pre][3], course_doc(pre))]),
                item(f"On what date is the examination of the prerequisite of {code}?", ex[pre][0],
                     [first, ("On what date is the examination of #1?", ex[pre][0], "exam-timetable-docx")]),
                item(f"On which days is the prerequisite of {code} taught?", c[pre][4],
                     [first, ("On which days is #1 taught?", c[pre][4], course_doc(pre))])]
    for ask, field in (("Where is the office of", 3), ("What is the telephone extension of", 4),
                       ("When are the office hours of", 5), ("Where did", 6), ("In which year did", 7)):
        tail = {6: " earn a PhD?", 7: " join the college?"}.get(field, "?")
        q = f"{ask} the instructor of {code}{tail}"
        out.append(item(q, str(i[field]), [by, (f"{ask} #1{tail}", str(i[field]), staff_doc(who))]))
    building = building_of(room)
    out += [item(f"In which building is {code} taught?", building,
                 [rooms, ("Which building is #1 in?", building, BUILDINGS_DOC)]),
            item(f"How many seats does the room where {code} is taught have?", seats(room),
                 [rooms, ("How many seats does #1 have?", seats(room), BUILDINGS_DOC)])]
    others = [k for k, v in c.items() if v[2] == who and k != code]
    if len(others) == 1:
        out.append(item(f"Which other course does the instructor of {code} teach?", others[0],
                        [by, ("Which other course does #1 teach?", others[0], staff_doc(who))], [c[others[0]][0]]))
    advised = [n for n, s in SOCIETIES.items() if s[0] == who]
    if len(advised) == 1:
        out.append(item(f"Which society is advised by the instructor of {code}?", advised[0],
                        [by, ("Which society is advised by #1?", advised[0], "student-societies")]))
    directs = [p for p in PROGRAMMES.values() if p[1] == who]
    if len(directs) == 1:
        out.append(item(f"Which programme is directed by the instructor of {code}?", directs[0][0],
                        [by, ("Which programme does #1 direct?", directs[0][0], did(directs[0][10]))]))
    return out


def instructor_two_hop(key):
    i = INSTRUCTORS[key]
    who = f"{i[1]} {i[0]}"
    building = building_of(i[3])
    return item(f"In which building is the office of {who}?", building,
                [(f"Where is the office of {who}?", i[3], staff_doc(key)),
                 ("Which building is #1 in?", building, BUILDINGS_DOC)])


def programme_two_hops(key):
    p = PROGRAMMES[key]
    doc, pre, d = did(p[10]), p[5], INSTRUCTORS[p[1]]
    first = (f"What is the prerequisite of the {p[0]}?", pre, doc)
    name, aliases = names(COURSES[pre][2])
    return [item(f"Who teaches the prerequisite of the {p[0]}?", name,
                 [first, ("Who teaches #1?", name, course_doc(pre))], aliases),
            item(f"In which room is the prerequisite of the {p[0]} taught?", COURSES[pre][3],
                 [first, ("In which room is #1 taught?", COURSES[pre][3], course_doc(pre))]),
            item(f"Where is the office of the director of the {p[0]}?", d[3],
                 [(f"Who directs the {p[0]}?", d[0], doc), ("Where is the office of #1?", d[3], staff_doc(p[1]))])]


def society_two_hop(name):
    who = SOCIETIES[name][0]
    i = INSTRUCTORS[who]
    return item(f"Where is the office of the faculty adviser of the {name}?", i[3],
                [(f"Who is the faculty adviser of the {name}?", i[0], "student-societies"),
                 ("Where is the office of #1?", i[3], staff_doc(who))])


def course_three_hops(code):
    c = COURSES
    who, doc = c[code][2], course_doc(code)
    office = INSTRUCTORS[who][3]
    out = [item(f"In which building is the office of the instructor of {code}?", building_of(office),
                [(f"Who teaches {code}?", INSTRUCTORS[who][0], doc),
                 ("Where is the office of #1?", office, staff_doc(who)),
                 ("Which building is #2 in?", building_of(office), BUILDINGS_DOC)])]
    pre = prereq(code)
    if pre:
        out.append(item(f"In which building is the prerequisite of {code} taught?", building_of(c[pre][3]),
                        [(f"What is the prerequisite of {code}?", pre, doc),
                         ("In which room is #1 taught?", c[pre][3], course_doc(pre)),
                         ("Which building is #2 in?", building_of(c[pre][3]), BUILDINGS_DOC)]))
    return out


def pick(key, candidates, n):
    """n of the candidates that apply, drawn with a generator seeded by the entity's key: the same draw every run.
    ('AST 310', [a, None, b, c], 2) -> e.g. [c, a]"""
    ok = [x for x in candidates if x is not None]
    return random.Random(f"catalogue:{key}").sample(ok, min(n, len(ok)))


def templated():
    """Every entity's drawn questions: per course one single-hop and TWO_HOP_PER_COURSE two-hop ones (and a three-hop
    one for one course in THREE_HOP_SHARE), per instructor, programme, building and society one or two."""
    out = []
    for n, code in enumerate(sorted(COURSES)):
        out += pick(code, course_singles(code), 1) + pick(code + ":2", course_two_hops(code), TWO_HOP_PER_COURSE)
        if n % THREE_HOP_SHARE == 0:
            out += pick(code + ":3", course_three_hops(code), 1)
    for key in sorted(INSTRUCTORS):
        out += pick(key, instructor_singles(key), 1) + [instructor_two_hop(key)]
    for key in sorted(PROGRAMMES):
        out += pick(key, programme_singles(key), 1) + pick(key + ":2", programme_two_hops(key), 1)
    for code in sorted(BUILDINGS):
        out += pick(code, building_singles(code), 1)
    out += [society_two_hop(name) for name in sorted(SOCIETIES)]
    return out
