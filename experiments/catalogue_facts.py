"""What the catalogue of Tarrowmere College says: a college made up for the lab, its buildings, staff, courses and
programmes, and the text of each of its documents as parts ("h", level, text), ("p", text), ("table", rows),
("list", items), ("page", "one" | "two") that experiments/make_catalogue.py writes as PDF, Word, HTML or Markdown.
Every fact is invented, so no model knows it from memory. The facts are spread so that many questions need two
files: a course page names its prerequisites by code only, a staff profile names its courses but not their rooms,
and only buildings-and-rooms.pdf says which building a room is in.
"""
import json
from pathlib import Path

COLLEGE = "Tarrowmere College"
YEAR = "2026-27"
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

# The tables are in catalogue_facts.json, one entry a line; what each entry holds, field by field:
# buildings: code -> [name, built, architect, opening hours, [[room, kind, seats, note], ...]]
# building_notes: code -> what the building is
# instructors: key -> [name, title, department, office, extension, office hours, PhD, year joined, research, file]
# courses: code -> [title, credits, instructor, room, days, time, term, prerequisites, what it is about,
#                   three topics, file]
# programmes: key -> [name, director, years, intake, deadline, prerequisite, fee, scholarship, award,
#                     {year: [codes]}, file]
# societies: name -> [adviser, room, when]; exam_days: term -> five dates; exam_rooms: rooms in turn;
# people: role -> [name, room, extension]; terms: [what, from, to]; summer_school: [from, to, fee];
# named_for: award -> who it is named for
_FACTS = json.loads(Path(__file__).with_suffix(".json").read_text(encoding="utf-8"))
BUILDINGS, BUILDING_NOTES, INSTRUCTORS = _FACTS["buildings"], _FACTS["building_notes"], _FACTS["instructors"]
COURSES, SOCIETIES, PEOPLE, NAMED_FOR = _FACTS["courses"], _FACTS["societies"], _FACTS["people"], _FACTS["named_for"]
PROGRAMMES = {k: v[:9] + [{int(y): codes for y, codes in v[9].items()}] + v[10:]   # JSON keys are strings
              for k, v in _FACTS["programmes"].items()}
EXAM_DAYS, EXAM_ROOMS, TERMS, SUMMER_SCHOOL = (_FACTS["exam_days"], _FACTS["exam_rooms"], _FACTS["terms"],
                                               _FACTS["summer_school"])
FOUNDER, FOUNDED, STUDENTS = "Josiah Quenby", 1897, "2,400"
FOUNDATIONS = {   # brochures of several courses: file -> (title, running header, opening line)
    "foundation-science-courses.pdf": ("Foundation Science Courses", "Chemistry and Biology",
                                       "The chemistry and biology courses that the science programmes build on."),
    "foundation-field-courses.pdf": ("Field Foundation Courses", "Field Skills",
                                     "The field courses that the geology and music programmes build on.")}


def exams():
    """{course code: (date, time, room)}: each term's courses in code order over its five exam days."""
    out = {}
    for term, days in EXAM_DAYS.items():
        for n, code in enumerate(sorted(c for c, v in COURSES.items() if v[6] == term)):
            out[code] = (days[n % 5], "09:30" if n // 5 % 2 == 0 else "14:00", EXAM_ROOMS[n % 3])
    return out


def building_of(room):
    return next(b[0] for b in BUILDINGS.values() for r in b[4] if r[0] == room)


def person(key):
    """'varga-thorne' -> 'Dr Imelda Varga-Thorne'."""
    return f"{INSTRUCTORS[key][1]} {INSTRUCTORS[key][0]}"


def h(level, text):
    return ("h", level, text)


def p(text):
    return ("p", text)


def page(layout="one"):
    """A new PDF page with one or two columns (the other formats ignore it)."""
    return ("page", layout)


def handbook():
    hub, adm, reg, lib = (PEOPLE[k] for k in ("hub", "admissions", "registrar", "librarian"))
    return [page("two"), h(1, "Welcome"),
            p(f"{COLLEGE} was founded in {FOUNDED} by the shipwright {FOUNDER}, who left his yard on the River Lisk "
              "to the town on condition that it became a place of learning. Today the college teaches about "
              f"{STUDENTS} students in {len(BUILDINGS)} buildings, from Corvin House in the town centre to Tidewater "
              "Station on the coast."),
            p("This handbook sets out the rules every student accepts on enrolment. Programme pages, course pages and "
              "the examination regulations add to it; where they differ, the examination regulations apply."),
            h(2, "Your student card"),
            p(f"The student card opens every teaching building and the Ostrander Library. A lost card is replaced at "
              f"the Student Hub in {hub[1]} for a fee of £15."),
            h(2, "Where to find things"),
            p("Each course page gives its room, its instructor and its prerequisites. The buildings guide lists every "
              "room of the college by building. Staff profiles give office hours."),
            page(), h(1, "Studying"), h(2, "Credits"),
            p("A full year of study is 120 credits. Most courses are worth 15 credits; final-year and field courses "
              "are often worth 30."),
            h(2, "Attendance"),
            p("Students must attend at least 80% of the classes of each course. A student who falls below this is "
              "reported to the programme director."),
            h(2, "Late submission"),
            p("Coursework handed in after its deadline loses 5 marks per working day, for up to five working days; "
              "after that it receives a mark of zero. Extensions are granted by the Student Hub, not by instructors."),
            h(2, "Choosing courses"),
            p("Every course page names its prerequisites by course code. Enrolment in a course whose prerequisites "
              "you have not passed is cancelled in the second week of term."),
            page(), h(1, "Support and contacts"),
            p("The offices below answer most questions. Call them from any college telephone by extension."),
            ("table", [["Service", "Room", "Extension", "Contact"], ["Student Hub", hub[1], hub[2], hub[0]],
                       ["Admissions Office", adm[1], adm[2], adm[0]], ["Registry", reg[1], reg[2], reg[0]],
                       ["Library desk", "OSL", lib[2], lib[0]], ["Health centre", "CRV 8", "4999", "duty nurse"],
                       ["IT help desk", "HAL 005", "4410", "walk-in"]]),
            page("two"), h(1, "Conduct and appeals"), h(2, "Academic misconduct"),
            p("Copying, buying work or inventing data is misconduct. A first case is heard by the programme director; "
              "a second goes to the college's Conduct Panel, which may end a student's registration."),
            h(2, "Appeals"),
            p(f"An appeal against a mark or a decision must reach the Academic Registrar, {reg[0]}, in {reg[1]}, "
              "within 15 working days of the decision. The Registrar replies within 30 working days."),
            h(2, "Complaints"),
            p("Complaints about a service go first to the office that gave it, then to the Student Hub."),
            page("two"), h(1, "Field work and safety"), h(2, "At sea"),
            p("No student may board a college boat at Tidewater Station without a partner and a lifejacket, and "
              "every trip is logged with the station warden before it leaves."),
            h(2, "At night"),
            p("The dome of the Vesper Observatory may not be used after 23:00 without the duty technician."),
            h(2, "In the laboratories"),
            p("Lab coats and eye protection are worn in every laboratory. Food and drink stay outside."),
            page(), h(1, "Getting around"),
            p("A free shuttle bus leaves Marrick Hall for Tidewater Station at 07:45 and 12:15 on teaching days and "
              "returns at 13:00 and 17:30."),
            p("Parking permits cost £45 a year from the Student Hub. Bicycles may be left in the covered store behind "
              "the Halloran Building.")]


def regulations():
    return [page(), h(1, "Scope"),
            p(f"These regulations govern every examination of {COLLEGE} in {YEAR}. They are made by the Academic Board "
              "and take precedence over course pages and the student handbook."),
            h(1, "Marks and passing"),
            p("Every course is marked out of 100. The pass mark is 40. A programme's prerequisite course must be "
              "passed with grade C or better."),
            ("table", [["Grade", "Marks", "Meaning"], ["A", "70-100", "excellent"], ["B", "60-69", "very good"],
                       ["C", "50-59", "good"], ["D", "40-49", "pass"], ["F", "0-39", "fail"]]),
            page("two"), h(1, "In the examination hall"), h(2, "Arriving"),
            p("Candidates must arrive 20 minutes before the start. No one may enter more than 30 minutes after the "
              "start, or leave in the first 45 minutes."),
            h(2, "What to bring"),
            p("Bring your student card and black pens. Calculators are allowed only where the course page says so, "
              "and only the college model TC-2, sold at the Student Hub for £12."),
            h(2, "Illness"),
            p("A candidate who is ill on the day sends a medical note to the Registry within five working days."),
            page(), h(1, "Resits"),
            p(f"A student who fails a course may resit its examination at most twice. Resits are held from "
              f"{TERMS[-1][1]} to {TERMS[-1][2]}, and a resit mark is capped at 40."),
            h(1, "Results"),
            p("Results are published on the student portal 15 working days after the end of each examination period.")]


def fees():
    progs = PROGRAMMES.values()
    return [page(), h(1, "Tuition fees"),
            p(f"Tuition fees for {YEAR} are charged per year of study and are the same for every student of a "
              "programme. They are paid in two instalments, due on 15 October and 15 February."),
            ("table", [["Programme", "Annual fee", "Years"]] + [[v[0], f"£{v[6]}", str(v[2])] for v in progs]),
            page(), h(1, "Scholarships"),
            p("Each programme has one named scholarship, awarded every year by the admissions tutor on the advice of "
              "the programme director. Applications close on 31 May 2027."),
            ("table", [["Scholarship", "Programme", "Amount per year", "Named for"]]
             + [[v[7], v[0], f"£{v[8]}", NAMED_FOR[v[7]]] for v in progs]),
            h(1, "Other costs"),
            p(f"The Summer Bridging School costs £{SUMMER_SCHOOL[2]}. A replacement student card costs £15 and a "
              "parking permit £45 a year."),
            page("two"), h(1, "Quenby Hardship Fund"),
            p("The Quenby Hardship Fund gives grants of up to £800 a year to students whose money runs short. "
              "Grants do not have to be repaid."),
            p("Apply at the Student Hub with three months of bank statements. Decisions are made within ten working "
              "days.")]


def admissions():
    adm, reg = PEOPLE["admissions"], PEOPLE["registrar"]
    progs = PROGRAMMES.values()
    return [p(f"These rules govern admission to the undergraduate programmes of {COLLEGE} for {YEAR}."),
            h(1, "Who decides"),
            p(f"Admissions decisions are made by the admissions tutor, {adm[0]}, together with the programme "
              f"director. The Admissions Office is in room {adm[1]}, telephone extension {adm[2]}."),
            h(1, "Entry requirements"), h(2, "School qualifications"),
            p("Applicants need three passes at advanced level or an equivalent, one of them in a science for the "
              "BSc programmes."),
            h(2, "Prerequisite courses"),
            p("Each programme names one prerequisite course of the college. It must be passed with grade C or better "
              "before the programme starts, either as a student of the college or at the Summer Bridging School."),
            ("table", [["Programme", "Prerequisite course"]] + [[v[0], v[5]] for v in progs]),
            h(2, "Deadlines and places"),
            ("table", [["Programme", "Applications close", "Places"]] + [[v[0], v[4], str(v[3])] for v in progs]),
            h(1, "Interviews"),
            p("Applicants who meet the requirements are interviewed in person or by video call."),
            h(3, "History of Science BA portfolio"),
            p("Applicants to the History of Science BA send a portfolio of two essays of at most 1,500 words each."),
            h(3, "Marine Biology BSc swimming test"),
            p("Applicants to the Marine Biology BSc must swim 200 metres in open water before their first boat trip."),
            h(1, "Offers and reviews"),
            p(f"Offers are sent within six weeks of the deadline. An applicant may ask the Academic Registrar, "
              f"{reg[0]}, to review a decision within 10 working days.")]


def calendar():
    return [p(f"The dates of the academic year {YEAR} at {COLLEGE}."), h(1, "Terms"),
            ("table", [["Period", "Starts", "Ends"]] + [list(t) for t in TERMS]), h(1, "Key dates"),
            h(2, "Enrolment"), p("Enrolment for new students opens on 21 September 2026 at the Student Hub."),
            h(2, "Graduation"), p("Graduation is held on 9 July 2027 in the Great Room of Marrick Hall."),
            h(2, "Closure days"), p("The college is closed from 24 December 2026 to 1 January 2027.")]


def services():
    hub = PEOPLE["hub"]
    return [p(f"Services for students of {COLLEGE}, where to find them and when they open."),
            h(1, "Student Hub"),
            p(f"The Student Hub in {hub[1]} handles enrolment, extensions, student cards and parking permits. It is "
              f"open 09:00 to 17:00 on weekdays; call extension {hub[2]}. The manager is {hub[0]}."),
            h(1, "IT help desk"),
            p("The IT help desk is in room HAL 005 and is open 08:00 to 19:00 on weekdays. Call extension 4410. "
              "Password resets need your student card."),
            h(1, "Health centre"), p("A nurse is on duty in CRV 8 every weekday morning; call extension 4999."),
            h(1, "Food and drink"), h(2, "The Lantern cafe"),
            p("The Lantern cafe in MRK 009 serves breakfast and lunch from 08:00 to 18:00."),
            h(2, "Station canteen"), p("At Tidewater Station a canteen opens at lunchtime on teaching days."),
            h(1, "Opening times at a glance"),
            ("table", [["Service", "Room", "Opens"], ["Student Hub", hub[1], "09:00-17:00"],
                       ["IT help desk", "HAL 005", "08:00-19:00"], ["The Lantern cafe", "MRK 009", "08:00-18:00"]])]


def library():
    lib = PEOPLE["librarian"]
    return [p(f"The Ostrander Library holds the college's books, journals and rare collections. The librarian is "
              f"{lib[0]} (extension {lib[2]})."),
            h(1, "Opening hours"),
            ("table", [["Days", "Hours"], ["Monday to Friday", "08:00-23:00"], ["Saturday", "10:00-18:00"],
                       ["Sunday", "12:00-18:00"]]),
            h(1, "Borrowing"),
            p("Undergraduates may borrow 15 books for three weeks; staff may borrow 40 books for a term. A book "
              "that is late blocks further loans until it is returned."),
            h(1, "The Fennick Reading Room"),
            p("Rare books and star atlases are read in the Fennick Reading Room, OSL G12, by appointment only. "
              "Only pencils are allowed."),
            h(1, "Group study"), p("Room OSL 110 can be booked for two hours at a time at the library desk.")]


def societies():
    parts = [p("Student societies of the college, each with a faculty adviser and a regular meeting.")]
    for name, (adviser, room, when) in SOCIETIES.items():
        parts += [h(1, name), p(f"Faculty adviser: {person(adviser)}."), p(f"Meets {when} in room {room}.")]
    return parts + [h(1, "Lisk Rowing Club"), p("The rowing club has no faculty adviser; its coach is Marta "
                                                "Quillfeather. Crews train on the River Lisk at 06:30.")]


def bridging():
    start, end, fee = SUMMER_SCHOOL
    return [p(f"The Summer Bridging School runs from {start} to {end}. It teaches the prerequisite course of each "
              "programme in six weeks, for applicants who have not passed it."),
            h(1, "Courses"), ("list", [f"{v[5]}, the prerequisite of the {v[0]}" for v in PROGRAMMES.values()]),
            h(1, "Fees and housing"),
            p(f"The school costs £{fee}, housing included. Places are offered in the order applications arrive."),
            h(1, "Passing"),
            p("A course passed at the school with grade C or better counts as the programme's prerequisite.")]


def course(code):
    """A course page: its credits, description, prerequisites (codes only), instructor, schedule and room."""
    title, credits, who, room, days, time, term, pre, about, topics, _ = COURSES[code]
    dept = INSTRUCTORS[who][2]
    prereq = (f"Students must have passed {' and '.join(pre)} before enrolling. A pass at the Summer Bridging School "
              "counts." if pre else "None: the course is open to every student of the college.")
    coursework = "a field report (50%)" if code[:3] in ("MAR", "AST", "GEO") else "two problem sets (40%)"
    return [p(f"{code} {title} is worth {credits} credits and is taught in the {term} term of {YEAR} by the "
              f"Department of {dept}."),
            h(1, "Description"),
            p(f"This course {about}. Teaching mixes lectures, practical sessions and reading, and each week ends with "
              "a short exercise that is discussed at the start of the next class."),
            h(2, "Weekly plan"),
            ("table", [["Weeks", "Topic"], ["1-3", topics[0]], ["4-7", topics[1]], ["8-10", topics[2]],
                       ["11", "revision"]]),
            h(1, "Prerequisites"), p(prereq),
            h(1, "Assessment"), h(2, "Coursework"), p(f"Coursework is {coursework}, handed in through the portal."),
            h(2, "Examination"),
            p("The written examination makes up the rest of the mark. Its date and room are in the examination "
              "timetable."),
            page(), h(1, "Teaching"), h(2, "Instructor"),
            p(f"The course is taught by {person(who)}. Office hours and contact details are on the instructor's "
              "staff profile."),
            h(2, "Schedule"),
            ("table", [["Day", "Time", "Room"]] + [[d, time, room] for d in DAYS if d in days]),
            p(f"Classes meet on {days}, {time}, in room {room}.")]


def instructor(key):
    """A staff profile: post, contact table (the office), doctorate, research and the courses taught (by code)."""
    name, title, dept, office, ext, hours, phd, joined, research, _ = INSTRUCTORS[key]
    surname = name.split()[-1]
    where = phd if phd.endswith("University") else f"the {phd}"
    return [p(f"{person(key)} is a {'Professor' if title == 'Prof.' else 'Lecturer'} in the Department of {dept} "
              f"at {COLLEGE}, which {surname} joined in {joined}."),
            h(1, "Contact"),
            ("table", [["Item", "Details"], ["Office", office], ["Telephone extension", ext],
                       ["Email", f"{name[0].lower()}.{surname.lower()}@tarrowmere.example"], ["Office hours", hours]]),
            h(1, "Biography"),
            p(f"{surname} earned a PhD at {where} before coming to Tarrowmere, and has taught in the Department of "
              f"{dept} since {joined}."),
            h(2, "Research"), p(f"{surname}'s research is on {research}."),
            h(1, "Teaching"), p(f"In {YEAR} {surname} teaches:"),
            ("list", [f"{c} {v[0]} ({v[6]} term)" for c, v in COURSES.items() if v[2] == key])]


def programme(key):
    """A programme brochure: about it (two columns), its courses by year, admissions and its director."""
    name, director, years, intake, deadline, prereq, _, _, _, plan, _ = PROGRAMMES[key]
    rows = [["Year", "Code", "Course", "Credits"]] + [[str(y), c, COURSES[c][0], str(COURSES[c][1])]
                                                      for y, codes in plan.items() for c in codes]
    subject = name.rsplit(" ", 1)[0]
    return [page("two"), h(1, "About the programme"),
            p(f"The {name} is a {years}-year degree of {COLLEGE}. It is taught by staff who work on {subject} "
              "themselves, in small classes, with practical work from the first term."),
            p("Students take core courses in each year and choose further courses from any department, as long as "
              "they have passed each course's prerequisites."),
            h(2, "Who it is for"),
            p(f"Applicants who want to study {subject.lower()} in depth and are ready for practical work outdoors "
              "and in the laboratory or archive."),
            h(2, "After graduating"),
            p("Graduates go on to research degrees, museums, public agencies, schools and industry."),
            page(), h(1, "Programme structure"), p("The core courses, by year of study:"), ("table", rows),
            p("Further courses are chosen each year with the programme director, from any department, as long as "
              "the timetable allows and the prerequisites of each course have been passed."),
            page(), h(1, "Admissions"),
            p(f"The {name} admits {intake} students each year. Applications close on {deadline}."),
            h(2, "Prerequisite"),
            p(f"Before the programme starts, every student must pass {prereq} with grade C or better, either at the "
              "college or at the Summer Bridging School."),
            h(2, "Programme director"),
            p(f"The programme director is {person(director)}, who answers questions about the programme."),
            h(2, "Fees"), p(f"The tuition fee and the programme's scholarship are set out in Fees and Funding {YEAR}.")]


def buildings():
    """Every building's rooms: the only document that says which building a room is in."""
    parts = [page("two"), h(1, "How rooms are numbered"),
             p("Every room has a building code and a number, such as HAL 104: the first digit of the number is the "
               "floor, and G or 0 is the ground floor."),
             h(1, "Access"), p("The student card opens every building in its opening hours. Keys are held by porters.")]
    for code, (name, built, architect, hours, rooms) in BUILDINGS.items():
        parts += [page(), h(1, name),
                  p(f"{name} (code {code}) is {BUILDING_NOTES[code]}. It was built in {built}"
                    + (f" to designs by {architect}" if architect != "unknown" else "") + f". Open {hours}."),
                  ("table", [["Room", "Use", "Seats", "Notes"]]
                   + [[r, kind, str(seats) if seats else "-", note or "-"] for r, kind, seats, note in rooms])]
    return parts


def timetable():
    """Every course's weekly classes, one table per term (landscape)."""
    parts = [page("two"), h(1, "About this timetable"),
             p("Classes run in every teaching week of the term. Reading week has no classes."),
             p("A change of room is announced on the course page at least a week ahead.")]
    for term in ("Autumn", "Spring"):
        rows = sorted((DAYS.index(d), v[5], c, v[0], v[3]) for c, v in COURSES.items() if v[6] == term
                      for d in DAYS if d in v[4])
        parts += [page(), h(1, f"{term} term"),
                  ("table", [["Day", "Time", "Code", "Course", "Room"]] + [[DAYS[d], *r] for d, *r in rows])]
    return parts


def exam_timetable():
    """Every course's written examination: date, start and room, by course code only."""
    dates = exams()
    parts = [p(f"Written examinations of {YEAR}. Candidates arrive 20 minutes before the start.")]
    for term in ("Autumn", "Spring"):
        parts += [h(1, f"{term} examinations"), ("table", [["Course", "Date", "Start", "Room"]] + [
            [c, *dates[c]] for c in sorted(dates) if COURSES[c][6] == term])]
    return parts + [h(1, "Rules on the day"), p("The examination regulations apply to every examination.")]


def foundation(file):
    """The courses of one brochure (file), each on a two-column page: no course has a page of its own."""
    parts = [page(), p(FOUNDATIONS[file][2])]
    for code in (c for c, v in COURSES.items() if v[10] == file):
        parts += [page("two"), h(1, f"{code} {COURSES[code][0]}")]
        parts += [(x[0], min(x[1] + 1, 3), x[2]) if x[0] == "h" else x for x in course(code) if x[0] != "page"]
    return parts


def documents():
    """{file name: (title, running header, parts)} for every document."""
    head = f"{COLLEGE} · "
    docs = {v[10]: (f"{c} {v[0]}", head + f"{c} course outline {YEAR}", course(c)) for c, v in COURSES.items()
            if v[10] not in FOUNDATIONS}
    docs.update({f: (title, head + header, foundation(f)) for f, (title, header, _) in FOUNDATIONS.items()})
    docs.update({v[9]: ((f"Curriculum Vitae: {person(k)}" if v[9].endswith(".docx") else person(k)),
                        head + f"Department of {v[2]}", instructor(k)) for k, v in INSTRUCTORS.items()})
    docs.update({v[10]: (v[0], head + f"{v[0]} {YEAR}", programme(k)) for k, v in PROGRAMMES.items()})
    docs.update({
        "buildings-and-rooms.pdf": ("Buildings and Rooms", head + "Estates Office", buildings()),
        "teaching-timetable.pdf": (f"Teaching Timetable {YEAR}", head + f"Teaching Timetable {YEAR}", timetable()),
        "student-handbook.pdf": (f"Student Handbook {YEAR}", head + f"Student Handbook {YEAR}", handbook()),
        "examination-regulations.pdf": (f"Examination Regulations {YEAR}", head + "Registry", regulations()),
        "fees-and-funding.pdf": (f"Fees and Funding {YEAR}", head + f"Fees and Funding {YEAR}", fees()),
        "admissions-rules.docx": (f"Admissions Rules {YEAR}", head + "Admissions Office", admissions()),
        "exam-timetable.docx": (f"Examination Timetable {YEAR}", head + "Registry", exam_timetable()),
        "academic-calendar.html": (f"Academic Calendar {YEAR}", "", calendar()),
        "campus-services.html": ("Campus Services", "", services()),
        "library-guide.md": ("Ostrander Library Guide", "", library()),
        "student-societies.md": ("Student Societies", "", societies()),
        "summer-bridging-school.md": ("Summer Bridging School 2026", "", bridging())})
    return docs
