"""The golden questions about the made-up college of experiments/catalogue_facts.py, in the shape of the lab's
golden.json: each answer computed from the facts, each hop with the question it answers and the document that says
it (MuSiQue's "#1" names the previous hop's answer). experiments/make_catalogue.py writes them to
catalogue/golden.json.
"""
import re

from experiments.catalogue_facts import (BUILDINGS, COURSES, INSTRUCTORS, PEOPLE, PROGRAMMES, SOCIETIES, building_of,
                                         documents, exams, person)
from experiments.catalogue_templates import BUILDINGS_DOC, course_doc, did, item, names, staff_doc, templated

TEST_BUILDINGS = {"ARL", "KST", "PNC", "WLD"}   # the test split: these buildings and whoever and whatever is in them


def only_prereq(code):
    pre = COURSES[code][7]
    assert len(pre) == 1, (code, pre)
    return pre[0]


def singles():
    c, i = COURSES, INSTRUCTORS
    one = lambda q, a, doc, aliases=(): item(q, a, [(q, a, doc)], aliases)
    return [
        one("How many credits is AST 310 worth?", f"{c['AST 310'][1]} credits", course_doc("AST 310"),
            [str(c["AST 310"][1])]),
        one("Who teaches HSC 220?", i["rooke"][0], course_doc("HSC 220"), names("rooke")[1]),
        one("In which room is DSC 240 taught?", c["DSC 240"][3], course_doc("DSC 240")),
        one("Where is Dr Anselm Rooke's office?", i["rooke"][3], staff_doc("rooke")),
        one("When do applications to the Marine Biology BSc close?", PROGRAMMES["marine-biology"][4],
            did(PROGRAMMES["marine-biology"][10])),
        one("How many students does the Astrobiology BSc admit each year?", str(PROGRAMMES["astrobiology"][3]),
            did(PROGRAMMES["astrobiology"][10])),
        one("What time does the Ostrander Library open on Saturdays?", "10:00", "library-guide"),
        one("Which room is the Fennick Reading Room?", "OSL G12", BUILDINGS_DOC),
        one("How many marks does late coursework lose per working day?", "5 marks", "student-handbook-pdf", ["5"]),
        one("How many times may a student resit the examination of a failed course?", "twice",
            "examination-regulations-pdf", ["two"]),
        one("What is the annual tuition fee of the Marine Biology BSc?", f"£{PROGRAMMES['marine-biology'][6]}",
            "fees-and-funding-pdf", [PROGRAMMES["marine-biology"][6]]),
        one("Which scholarship is named for the antiquarian Lionel Fennick?", "Fennick Bursary",
            "fees-and-funding-pdf"),
        one("When does the spring term 2027 begin?", "11 January 2027", "academic-calendar-html"),
        one("What is the telephone extension of the IT help desk?", "4410", "campus-services-html"),
        one("Who is the admissions tutor of Tarrowmere College?", "Idris Pemberton-Vale", "admissions-rules-docx"),
        one("Who founded Tarrowmere College?", "Josiah Quenby", "student-handbook-pdf"),
        one("In which room does the Stargazers' Circle meet?", SOCIETIES["Stargazers' Circle"][1], "student-societies"),
        one("On what date is the DSC 120 examination?", exams()["DSC 120"][0], "exam-timetable-docx"),
        one("At which university did Wren Albescu earn a PhD?", i["albescu"][6], staff_doc("albescu")),
        one("What is the prerequisite of AST 310?", only_prereq("AST 310"), course_doc("AST 310")),
    ]


def multis():
    c, i, ex = COURSES, INSTRUCTORS, exams()
    out = []
    for code in ("AST 310", "HSC 315", "DSC 350"):   # who teaches the prerequisite
        pre = only_prereq(code)
        name, aliases = names(c[pre][2])
        out.append(item(f"Who teaches the prerequisite of {code}?", name,
                        [(f"What is the prerequisite of {code}?", pre, course_doc(code)),
                         ("Who teaches #1?", name, course_doc(pre))], aliases))
    for code in ("AST 320", "MAR 270"):              # where the prerequisite is taught
        pre = only_prereq(code)
        out.append(item(f"In which room is the prerequisite of {code} taught?", c[pre][3],
                        [(f"What is the prerequisite of {code}?", pre, course_doc(code)),
                         ("In which room is #1 taught?", c[pre][3], course_doc(pre))]))
    for code in ("MAR 260", "PHY 226", "DSC 330", "AST 210"):   # the office of its instructor, or office hours
        who = c[code][2]
        name = i[who][0]
        asks_hours = code == "AST 210"
        answer = i[who][5] if asks_hours else i[who][3]
        q = "When are the office hours of" if asks_hours else "Where is the office of"
        out.append(item(f"{q} the instructor who teaches {code}?", answer,
                        [(f"Who teaches {code}?", name, course_doc(code)),
                         (f"{q} #1?", answer, staff_doc(who))]))
    for code in ("MAR 345", "HSC 230", "CHM 205"):   # the building a course is taught in
        room = c[code][3]
        out.append(item(f"In which building is {code} taught?", building_of(room),
                        [(f"In which room is {code} taught?", room, course_doc(code)),
                         ("Which building is #1 in?", building_of(room), BUILDINGS_DOC)]))
    for code, ask, answer in (("HSC 101", "Which cafe is in the same building as the room where HSC 101 is taught?",
                               "The Lantern"),
                              ("PHY 226", "Which telescope is housed in the same building as the room where PHY 226 "
                               "is taught?", "Halvard refractor")):
        room = c[code][3]
        out.append(item(ask, answer, [(f"In which room is {code} taught?", room, course_doc(code)),
                                      ("What is in the same building as #1?", answer, BUILDINGS_DOC)]))
    who = c["HSC 101"][2]
    prog = next(v for v in PROGRAMMES.values() if v[1] == who)
    out.append(item("Which programme is directed by the instructor of HSC 101?", prog[0],
                    [("Who teaches HSC 101?", i[who][0], course_doc("HSC 101")),
                     ("Which programme does #1 direct?", prog[0], did(prog[10]))]))
    for key, ask, field in (("marine-biology", "Where is the office of", 3),
                            ("astrobiology", "What is the telephone extension of", 4)):
        prog = PROGRAMMES[key]
        out.append(item(f"{ask} the director of the {prog[0]}?", i[prog[1]][field],
                        [(f"Who directs the {prog[0]}?", i[prog[1]][0], did(prog[10])),
                         (f"{ask} #1?", i[prog[1]][field], staff_doc(prog[1]))]))
    for key, dept, ask in (("astrobiology", "", "Which course shares a prerequisite with the Astrobiology programme?"),
                           ("marine-biology", "History of Science ", "Which History of Science course has the Marine "
                            "Biology BSc's prerequisite as one of its own prerequisites?")):
        prog = PROGRAMMES[key]
        pre = prog[5]
        sharing = [k for k, v in c.items() if pre in v[7] and (not dept or i[v[2]][2] == dept.strip())]
        assert len(sharing) == 1, (key, sharing)
        out.append(item(ask, sharing[0], [(f"What is the prerequisite of the {prog[0]}?", pre, did(prog[10])),
                                          (f"Which {dept}course lists #1 as a prerequisite?", sharing[0],
                                           course_doc(sharing[0]))], [c[sharing[0]][0]]))
    who = c["AST 110"][2]
    other = next(k for k, v in c.items() if v[2] == who and k != "AST 110")
    out.append(item("Which other course does the instructor of AST 110 teach?", other,
                    [("Who teaches AST 110?", i[who][0], course_doc("AST 110")),
                     ("Which other course does #1 teach?", other, staff_doc(who))], [c[other][0]]))
    pre = only_prereq("DSC 350")
    out.append(item("On what date is the examination of the prerequisite of DSC 350?", ex[pre][0],
                    [("What is the prerequisite of DSC 350?", pre, course_doc("DSC 350")),
                     ("On what date is the examination of #1?", ex[pre][0], "exam-timetable-docx")]))
    for code in ("PHY 226", "MAR 270"):              # the society its instructor advises
        who = c[code][2]
        name, (_, room, _) = next((n, s) for n, s in SOCIETIES.items() if s[0] == who)
        ask, answer = ((f"Which society is advised by the instructor of {code}?", name) if code == "PHY 226" else
                       (f"In which room does the society advised by the instructor of {code} meet?", room))
        out.append(item(ask, answer, [(f"Who teaches {code}?", i[who][0], course_doc(code)),
                                      (ask.replace(f"the instructor of {code}", "#1"), answer, "student-societies")]))
    for code, field, ask in (("DSC 120", 6, "At which university did the instructor of DSC 120 earn a PhD?"),
                             ("HSC 220", 7, "In which year did the instructor of HSC 220 join the college?")):
        who = c[code][2]
        answer = str(i[who][field])
        out.append(item(ask, answer, [(f"Who teaches {code}?", i[who][0], course_doc(code)),
                                      (ask.replace(f"the instructor of {code}", "#1"), answer, staff_doc(who))]))
    for key, ask, field in (("data-science", "Who teaches the prerequisite of the Data Science BSc?", 2),
                            ("marine-biology", "On which days is the Marine Biology BSc's prerequisite taught?", 4)):
        prog = PROGRAMMES[key]
        pre = prog[5]
        answer, aliases = names(c[pre][2]) if field == 2 else (c[pre][field], [])
        out.append(item(ask, answer, [(f"What is the prerequisite of the {prog[0]}?", pre, did(prog[10])),
                                      (ask.replace(f"the {prog[0]}'s prerequisite", "#1")
                                       .replace(f"the prerequisite of the {prog[0]}", "#1"), answer,
                                       course_doc(pre))], aliases))
    pre = only_prereq("MTH 241")
    start = c[pre][5].split("-")[0]
    out.append(item("At what time do classes of the prerequisite of MTH 241 start?", start,
                    [("What is the prerequisite of MTH 241?", pre, course_doc("MTH 241")),
                     ("At what time do classes of #1 start?", start, course_doc(pre))]))
    room = c["DSC 350"][3]
    seats = next(str(r[2]) for b in BUILDINGS.values() for r in b[4] if r[0] == room)
    out.append(item("How many seats does the room where DSC 350 is taught have?", seats,
                    [("In which room is DSC 350 taught?", room, course_doc("DSC 350")),
                     ("How many seats does #1 have?", seats, BUILDINGS_DOC)]))
    prog = PROGRAMMES["marine-biology"]
    out.append(item(f"Which scholarship is offered to students of the programme directed by "
                    f"{person(prog[1])}?", prog[7],
                    [(f"Which programme does {person(prog[1])} direct?", prog[0], did(prog[10])),
                     ("Which scholarship is offered to students of #1?", prog[7], "fees-and-funding-pdf")]))
    who = c["BIO 214"][2]                          # three hops
    office = i[who][3]
    out.append(item("In which building is the office of the instructor of BIO 214?", building_of(office),
                    [("Who teaches BIO 214?", i[who][0], course_doc("BIO 214")),
                     ("Where is the office of #1?", office, staff_doc(who)),
                     ("Which building is #2 in?", building_of(office), BUILDINGS_DOC)]))
    who = c["HSC 315"][2]
    other = next(k for k, v in c.items() if v[2] == who and k != "HSC 315")
    out.append(item("In which room is the other course taught by the instructor of HSC 315?", c[other][3],
                    [("Who teaches HSC 315?", i[who][0], course_doc("HSC 315")),
                     ("Which other course does #1 teach?", other, staff_doc(who)),
                     ("In which room is #2 taught?", c[other][3], course_doc(other))]))
    return out


def entity_split():
    """{entity: 'dev' | 'test'}: a building by TEST_BUILDINGS, a room by its building, an instructor by the building
    of the office, a course by its instructor, a programme by its director, a society by its adviser; the college's
    officers (admissions tutor, registrar...) are dev."""
    side = lambda building: "test" if building in TEST_BUILDINGS else "dev"
    out = {b[0]: side(code) for code, b in BUILDINGS.items()}
    out.update({r[0]: side(code) for code, b in BUILDINGS.items() for r in b[4]})
    out.update({i[0]: out[i[3]] for i in INSTRUCTORS.values()})
    out.update({code: out[INSTRUCTORS[c[2]][0]] for code, c in COURSES.items()})
    out.update({p[0]: out[INSTRUCTORS[p[1]][0]] for p in PROGRAMMES.values()})
    out.update({name: out[INSTRUCTORS[s[0]][0]] for name, s in SOCIETIES.items()})
    out.update({p[0]: "dev" for p in PEOPLE.values()})
    return out


def entities(it, split=None):
    """The courses, rooms, buildings, people, programmes and societies an item's question, hops and answer name.
    'Who teaches the prerequisite of AST 310?' -> ['AST 210', 'AST 310', 'Casimir Odunsi-Hale']"""
    split = split or entity_split()
    text = " ".join([it["question"], it["answer"], *it["aliases"]]
                    + [f"{h['question']} {h['answer']}" for h in it["decomposition"]])
    found = {e for e in split if re.search(rf"(?<![\w']){re.escape(e)}(?![\w'])", text)}
    found |= {i[0] for i in INSTRUCTORS.values() if re.search(rf"\b{re.escape(i[0].split()[-1])}\b", text)}
    return sorted(found)


def doc_texts():
    """{doc id: lower-cased text of its title and parts}: what the generator checks answers against."""
    def words(part):
        return {"h": lambda: part[2], "p": lambda: part[1], "list": lambda: " ".join(part[1]),
                "table": lambda: " ".join(" | ".join(r) for r in part[1])}.get(part[0], lambda: "")()
    return {did(f): " ".join([t] + [words(x) for x in parts]).lower() for f, (t, _, parts) in documents().items()}


def answerable(it, texts):
    """Each hop's answer is in its document, and a multi-hop answer is not in its first document already."""
    says = lambda doc, answers: any(a.lower() in texts[doc] for a in answers)
    hops_ok = all(says(h["doc"], [h["answer"]]) for h in it["decomposition"])
    return hops_ok and not (it["hops"] > 1 and says(it["decomposition"][0]["doc"], [it["answer"], *it["aliases"]]))


def golden():
    """The hand-written questions, then the templated ones not already asked and answerable from their hops, each
    with its entities and its split; an item whose entities fall in both splits is dropped (none today)."""
    texts, split = doc_texts(), entity_split()
    items, asked = [], set()
    for x in singles() + multis() + templated():
        if x["question"] in asked or not answerable(x, texts):
            continue
        asked.add(x["question"])
        ents = entities(x, split)
        sides = {split[e] for e in ents} or {"dev"}
        if len(sides) == 1:
            items.append({**x, "entities": ents, "split": sides.pop()})
    return [{"id": f"catalogue-{n:02d}", **x} for n, x in enumerate(items, 1)]
