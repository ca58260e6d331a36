"""What the catalogue of Tarrowmere College says: a college made up for the lab, its buildings, staff, courses and
programmes, and the text of each of its documents as parts ("h", level, text), ("p", text), ("table", rows),
("list", items), ("page", "one" | "two") that experiments/make_catalogue.py writes as PDF, Word, HTML or Markdown.
Every fact is invented, so no model knows it from memory. The facts are spread so that many questions need two
files: a course page names its prerequisites by code only, a staff profile names its courses but not their rooms,
and only buildings-and-rooms.pdf says which building a room is in.
"""
COLLEGE = "Tarrowmere College"
YEAR = "2026-27"
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

# code: (name, built, architect, opening hours, [(room, kind, seats, note)])
BUILDINGS = {
    "HAL": ("Halloran Building", 1964, "Mirela Sandqvist", "07:30 to 21:00 on weekdays, closed at weekends",
            [("HAL 005", "IT help desk", 0, "walk-in support"), ("HAL 104", "Lecture theatre", 120, "step-free"),
             ("HAL 112", "Seminar room", 30, ""), ("HAL 215", "Computer laboratory", 40, "the Corrow Suite"),
             ("HAL 322", "Office", 2, ""), ("HAL 324", "Office", 2, ""), ("HAL 326", "Office", 2, "")]),
    "VES": ("Vesper Observatory", 1931, "Tomas Ekwueme-Hart", "10:00 to 23:00, Monday to Saturday",
            [("VES 01", "Dome", 30, "houses the Halvard refractor"), ("VES 12", "Seminar room", 24, ""),
             ("VES 14", "Instrument laboratory", 16, "dark-room blinds"), ("VES 16", "Office", 1, ""),
             ("VES 18", "Office", 1, "")]),
    "MRK": ("Marrick Hall", 1908, "Edwin Pollexfen-Shaw", "08:00 to 20:00 every day",
            [("MRK 009", "Cafe", 60, "The Lantern cafe"), ("MRK 108", "Lecture theatre", 200, "the Great Room"),
             ("MRK 214", "Seminar room", 35, ""), ("MRK 230", "Seminar room", 25, ""), ("MRK 305", "Office", 2, ""),
             ("MRK 307", "Office", 2, "")]),
    "QNL": ("Quenby Laboratories", 1989, "Odile Marchetti-Brae", "08:00 to 18:00, card access until 22:00",
            [("QNL 120", "Wet laboratory", 32, ""), ("QNL 140", "Chemistry teaching laboratory", 48, "fume cupboards"),
             ("QNL 250", "Microscopy suite", 12, "the Selwyn microscopes"), ("QNL 260", "Office", 1, ""),
             ("QNL 262", "Office", 1, "")]),
    "TWS": ("Tidewater Station", 1972, "Ruairi Penfold", "07:00 to 19:00, tides permitting",
            [("TWS 3", "Aquarium hall", 40, "twelve seawater tanks"), ("TWS 7", "Classroom", 30, "by the boat store"),
             ("TWS 9", "Office", 1, ""), ("TWS 10", "Office", 1, ""), ("TWS 11", "Field laboratory", 20, "")]),
    "OSL": ("Ostrander Library", 1955, "Greta Holloway-Finch", "see the library guide",
            [("OSL G12", "Rare books room", 18, "the Fennick Reading Room"), ("OSL 110", "Group study room", 8, ""),
             ("OSL 201", "Seminar room", 20, ""), ("OSL 204", "Office", 1, "")]),
    "CRV": ("Corvin House", 1871, "unknown", "09:00 to 17:00 on weekdays",
            [("CRV 2", "Student Hub", 0, "front desk"), ("CRV 4", "Admissions Office", 0, ""),
             ("CRV 6", "Registry", 0, ""), ("CRV 8", "Health centre", 0, "nurse on duty")]),
}
BUILDING_NOTES = {
    "HAL": "the home of the Department of Data Science and of the IT help desk",
    "VES": "the college observatory on Beacon Knoll, used by Astrobiology and Physics",
    "MRK": "the oldest teaching building, with the Great Room where graduation is held",
    "QNL": "the science building, named after the college's founder",
    "TWS": "the marine field station at Penhallow Point, 11 km from the main campus",
    "OSL": "the college library and the History of Science seminar rooms",
    "CRV": "the administration house: Student Hub, Admissions Office and Registry",
}

# key: (name, title, department, office, extension, office hours, PhD, year joined, research, file)
INSTRUCTORS = {
    "varga-thorne": ("Imelda Varga-Thorne", "Dr", "Astrobiology", "VES 16", "4172", "Tuesdays 14:00 to 16:00",
                     "University of Kellbridge", 2014, "pigments of cold-desert microbial mats as biosignatures",
                     "staff-imelda-varga-thorne.html"),
    "odunsi-hale": ("Casimir Odunsi-Hale", "Prof.", "Astrobiology", "HAL 322", "4188", "Mondays 10:00 to 12:00",
                    "Ardlow Institute of Technology", 2009, "tidal heating of icy moons",
                    "staff-casimir-odunsi-hale.html"),
    "albescu": ("Wren Albescu", "Dr", "Data Science", "HAL 324", "4231", "Thursdays 15:00 to 17:00",
                "University of Sorrel Bay", 2019, "missing data in citizen-science records", "cv-wren-albescu.docx"),
    "merriweather-kang": ("Tobias Merriweather-Kang", "Dr", "Data Science", "HAL 326", "4236",
                          "Wednesdays 13:00 to 15:00", "Brantwood University", 2016,
                          "audit trails for public-sector algorithms", "cv-tobias-merriweather-kang.docx"),
    "ferreira-lund": ("Halima Ferreira-Lund", "Prof.", "Marine Biology", "TWS 9", "4610", "Fridays 09:00 to 11:00",
                      "Norrhaven Marine Institute", 2005, "cold-water coral reefs of the Lisk Shelf",
                      "staff-halima-ferreira-lund.html"),
    "castellane": ("Orrin Castellane", "Dr", "Marine Biology", "TWS 10", "4615", "Tuesdays 10:00 to 12:00",
                   "University of Sorrel Bay", 2018, "how harbour porpoises use sound in busy estuaries",
                   "staff-orrin-castellane.html"),
    "nkemelu": ("Perpetua Nkemelu", "Dr", "History of Science", "OSL 204", "4350", "Mondays 14:00 to 16:00",
                "University of East Marlow", 2012, "star catalogues made by colonial surveyors",
                "staff-perpetua-nkemelu.md"),
    "rooke": ("Anselm Rooke", "Dr", "History of Science", "MRK 305", "4356", "Wednesdays 10:00 to 12:00",
              "Brantwood University", 2011, "the instrument makers of the Lisk valley", "staff-anselm-rooke.md"),
    "demirel-quayle": ("Saskia Demirel-Quayle", "Dr", "Chemistry", "QNL 260", "4420", "Thursdays 11:00 to 13:00",
                       "Ardlow Institute of Technology", 2015, "mineral surfaces that catalyse sugar formation",
                       "cv-saskia-demirel-quayle.docx"),
    "iyer-lachance": ("Bartholomew Iyer-Lachance", "Dr", "Biology", "QNL 262", "4425", "Fridays 13:00 to 15:00",
                      "University of Kellbridge", 2010, "salt-loving bacteria of the Penhallow marshes",
                      "staff-bartholomew-iyer-lachance.md"),
    "tamsworth": ("Lucinda Tamsworth", "Dr", "Mathematics", "MRK 307", "4510", "Tuesdays 15:00 to 17:00",
                  "University of East Marlow", 2007, "random walks on graphs", "cv-lucinda-tamsworth.docx"),
    "oduya": ("Fennimore Oduya", "Dr", "Physics", "VES 18", "4177", "Wednesdays 16:00 to 18:00",
              "Brantwood University", 2017, "spectrographs built from recycled optics", "staff-fennimore-oduya.html"),
}

# code: (title, credits, instructor, room, days, time, term, prerequisites, what it is about, three topics, file)
COURSES = {
    "AST 110": ("Introduction to Astrobiology", 15, "varga-thorne", "HAL 104", "Monday and Wednesday", "09:00-10:30",
                "Autumn", [], "asks where life could exist beyond the Earth and how we would know it",
                ["the chemistry of life", "habitable zones", "the history of the search for life"], "ast-110.html"),
    "AST 210": ("Planetary Habitability", 15, "odunsi-hale", "VES 12", "Tuesday and Thursday", "11:00-12:30",
                "Autumn", ["AST 110", "CHM 105"], "compares the planets and moons where liquid water may last",
                ["energy sources for life", "icy moons and hidden oceans", "atmospheres and climate"], "ast-210.html"),
    "AST 310": ("Biosignatures and Remote Detection", 30, "varga-thorne", "VES 14", "Wednesday", "14:00-17:00",
                "Spring", ["AST 210"], "teaches how traces of life could be read from light and from samples",
                ["pigments and spectra", "false positives", "sample return"], "ast-310.html"),
    "AST 320": ("Extremophile Field Methods", 15, "odunsi-hale", "QNL 250", "Friday", "09:00-12:00", "Spring",
                ["BIO 214"], "trains students to sample and grow microbes from hot, salty and frozen places",
                ["sterile sampling", "culturing under stress", "field notebooks"], "ast-320.html"),
    "DSC 120": ("Programming for Data", 15, "albescu", "HAL 215", "Monday and Thursday", "13:00-14:30", "Autumn", [],
                "introduces programming for cleaning, joining and plotting tables of data",
                ["variables and loops", "tables and joins", "plots that do not mislead"], "dsc-120.docx"),
    "DSC 240": ("Statistical Learning", 15, "albescu", "HAL 215", "Tuesday and Friday", "10:00-11:30", "Spring",
                ["DSC 120", "MTH 140"], "covers regression, classification and honest estimates of error",
                ["linear models", "cross-validation", "trees and ensembles"], "dsc-240.docx"),
    "DSC 330": ("Data Ethics and Governance", 15, "merriweather-kang", "HAL 112", "Wednesday", "10:00-12:00",
                "Autumn", ["HSC 101"], "examines who is counted, who decides and who is harmed when data are used",
                ["consent and privacy", "bias audits", "records and archives"], "dsc-330.docx"),
    "DSC 350": ("Large-Scale Data Systems", 30, "merriweather-kang", "HAL 104", "Thursday", "15:00-17:00", "Spring",
                ["DSC 240"], "builds pipelines that store, index and query data too large for one machine",
                ["storage formats", "indexes", "scheduling jobs"], "dsc-350.docx"),
    "MAR 150": ("Ocean Life", 15, "ferreira-lund", "TWS 3", "Monday", "10:00-13:00", "Autumn", ["BIO 112"],
                "surveys the plants and animals of the sea from plankton to whales",
                ["plankton", "food webs", "the shore at low tide"], "mar-150.pdf"),
    "MAR 260": ("Coastal Ecology", 15, "castellane", "TWS 11", "Thursday", "09:00-12:00", "Spring", ["CHM 105"],
                "studies salt marshes, estuaries and rocky shores and the chemistry of their water",
                ["salinity and oxygen", "salt marshes", "estuary surveys"], "mar-260.pdf"),
    "MAR 270": ("Ocean Acoustics", 15, "castellane", "TWS 7", "Tuesday", "14:00-16:00", "Autumn", ["PHY 125"],
                "explains how sound travels under water and how animals and ships use it",
                ["waves and sound speed", "hydrophones", "noise and porpoises"], "mar-270.pdf"),
    "MAR 345": ("Deep-Sea Ecosystems", 30, "ferreira-lund", "TWS 11", "Wednesday", "09:00-12:00", "Autumn",
                ["MAR 150", "MAR 260"], "explores life in the dark, cold and high-pressure deep ocean",
                ["cold-water corals", "hydrothermal vents", "remote vehicles"], "mar-345.pdf"),
    "HSC 101": ("Foundations of the History of Science", 15, "nkemelu", "MRK 108", "Monday", "11:00-13:00", "Autumn",
                [], "follows how people have built and tested knowledge of nature",
                ["natural philosophy", "experiments and witnesses", "science and the state"], "hsc-101.md"),
    "HSC 220": ("Instruments and Observatories", 15, "rooke", "VES 12", "Thursday", "14:00-16:00", "Autumn",
                ["HSC 101"], "handles the telescopes, clocks and globes kept by the college",
                ["telescopes", "timekeeping", "instrument makers"], "hsc-220.md"),
    "HSC 230": ("Natural History Collections", 15, "rooke", "OSL 201", "Tuesday", "10:00-12:00", "Spring",
                ["HSC 101", "BIO 112"], "asks how specimens were collected, named and stored, and for whom",
                ["herbaria", "museum labels", "collectors and their guides"], "hsc-230.md"),
    "HSC 315": ("Science, Empire and Exploration", 30, "nkemelu", "MRK 230", "Wednesday", "15:00-17:00", "Spring",
                ["HSC 220"], "reads the records of survey voyages and the people they relied on",
                ["survey voyages", "star catalogues", "local guides and knowledge"], "hsc-315.md"),
    "CHM 105": ("General Chemistry", 15, "demirel-quayle", "QNL 140", "Monday and Wednesday", "14:00-15:30",
                "Autumn", [], "covers atoms, bonds, reactions and safe laboratory work",
                ["bonds", "equilibrium", "laboratory safety"], "foundation-science-courses.pdf"),
    "CHM 205": ("Organic and Prebiotic Chemistry", 15, "demirel-quayle", "QNL 140", "Tuesday and Thursday",
                "09:00-10:30", "Spring", ["CHM 105"], "studies carbon compounds and how they formed before life",
                ["functional groups", "sugars and amino acids", "mineral catalysts"], "foundation-science-courses.pdf"),
    "BIO 112": ("Cell and Organism", 15, "iyer-lachance", "QNL 120", "Tuesday and Friday", "13:00-14:30", "Autumn",
                [], "introduces cells, genes and how organisms grow and reproduce",
                ["the cell", "genes", "growth"], "foundation-science-courses.pdf"),
    "BIO 214": ("Microbial Diversity", 15, "iyer-lachance", "QNL 120", "Monday and Thursday", "10:00-11:30",
                "Spring", ["BIO 112"], "surveys bacteria, archaea and microbial fungi and the places they live",
                ["the tree of life", "metabolism", "microbes of extreme places"], "foundation-science-courses.pdf"),
    "MTH 140": ("Calculus and Linear Algebra", 15, "tamsworth", "MRK 214", "Monday, Wednesday and Friday",
                "08:30-09:30", "Autumn", [], "gives the mathematics every science course assumes",
                ["derivatives", "integrals", "matrices"], "mth-140.docx"),
    "MTH 241": ("Probability", 15, "tamsworth", "MRK 214", "Tuesday and Thursday", "13:00-14:30", "Spring",
                ["MTH 140"], "covers chance, random variables and the laws of large numbers",
                ["counting", "random variables", "limit theorems"], "mth-241.docx"),
    "PHY 125": ("Physics of the Universe", 15, "oduya", "MRK 108", "Tuesday and Thursday", "09:00-10:30", "Autumn",
                [], "explains light, gravity and the matter stars are made of",
                ["gravity and orbits", "light and spectra", "stars"], "phy-125.html"),
    "PHY 226": ("Optics and Spectroscopy", 15, "oduya", "VES 14", "Monday", "14:00-17:00", "Spring", ["MTH 140"],
                "builds and calibrates simple spectrographs and reads the spectra they make",
                ["lenses and gratings", "calibration", "stellar spectra"], "phy-226.html"),
}

# key: (name, director, years, intake, deadline, prerequisite, fee, scholarship, award, {year: [codes]}, file)
PROGRAMMES = {
    "astrobiology": ("Astrobiology BSc", "varga-thorne", 3, 36, "9 March 2027", "PHY 125", "9,480", "Vesper Prize",
                     "1,200", {1: ["AST 110", "CHM 105", "BIO 112", "MTH 140"], 2: ["AST 210", "CHM 205", "BIO 214"],
                               3: ["AST 310", "AST 320"]}, "programme-astrobiology.pdf"),
    "data-science": ("Data Science BSc", "merriweather-kang", 3, 60, "2 February 2027", "MTH 140", "9,480",
                     "Corrow Data Fellowship", "1,500", {1: ["DSC 120", "HSC 101"],
                                                         2: ["DSC 240", "MTH 241", "DSC 330"], 3: ["DSC 350"]},
                     "programme-data-science.pdf"),
    "marine-biology": ("Marine Biology BSc", "ferreira-lund", 4, 28, "23 March 2027", "BIO 112", "10,150",
                       "Penhallow Scholarship", "2,000", {1: ["MAR 150", "CHM 105", "PHY 125"],
                                                          2: ["MAR 260", "MAR 270", "BIO 214"], 4: ["MAR 345"]},
                       "programme-marine-biology.pdf"),
    "history-of-science": ("History of Science BA", "nkemelu", 3, 22, "30 April 2027", "HSC 101", "8,900",
                           "Fennick Bursary", "1,000", {1: ["HSC 220", "BIO 112"], 2: ["HSC 230", "DSC 330"],
                                                        3: ["HSC 315"]}, "programme-history-of-science.pdf"),
}

# name: (adviser, room, when)
SOCIETIES = {
    "Stargazers' Circle": ("oduya", "VES 01", "Fridays at 20:30"),
    "Tidepool Society": ("castellane", "TWS 3", "alternate Saturdays at 10:00"),
    "Open Data Club": ("albescu", "HAL 215", "Wednesdays at 18:00"),
    "Antiquarian Instruments Society": ("rooke", "OSL G12", "Thursdays at 17:30"),
}
EXAM_DAYS = {"Autumn": ["7 December 2026", "8 December 2026", "9 December 2026", "10 December 2026",
                        "11 December 2026"],
             "Spring": ["17 May 2027", "18 May 2027", "19 May 2027", "20 May 2027", "21 May 2027"]}
EXAM_ROOMS = ["MRK 108", "HAL 104", "QNL 140"]
PEOPLE = {"admissions": ("Idris Pemberton-Vale", "CRV 4", "4002"),
          "registrar": ("Hester Galloway-Mbeki", "CRV 6", "4005"),
          "librarian": ("Gwendolyn Asquith-Nwosu", "OSL 204", "4300"),
          "hub": ("Rafferty Okonjo-Bell", "CRV 2", "4000")}
FOUNDER, FOUNDED, STUDENTS = "Josiah Quenby", 1897, "2,400"
TERMS = [("Autumn term", "28 September 2026", "11 December 2026"),
         ("Reading week", "2 November 2026", "6 November 2026"),
         ("Autumn examinations", "7 December 2026", "11 December 2026"),
         ("Spring term", "11 January 2027", "30 April 2027"), ("Spring examinations", "17 May 2027", "21 May 2027"),
         ("Resit examinations", "16 August 2027", "20 August 2027")]
SUMMER_SCHOOL = ("6 July 2026", "14 August 2026", "650")


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
              f"{STUDENTS} students in seven buildings, from Corvin House in the town centre to Tidewater Station on "
              "the coast."),
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


NAMED_FOR = {"Vesper Prize": "the Vesper family, who gave the observatory",
             "Corrow Data Fellowship": "Ines Corrow, a graduate of the college",
             "Penhallow Scholarship": "the Penhallow Point fishing cooperative",
             "Fennick Bursary": "the antiquarian Lionel Fennick"}


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
    coursework = "a field report (50%)" if code[:3] in ("MAR", "AST") else "two problem sets (40%)"
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


def foundation():
    """Chemistry and Biology courses in one brochure, each on a two-column page."""
    parts = [page(), p("The chemistry and biology courses that the science programmes build on.")]
    for code in ("CHM 105", "CHM 205", "BIO 112", "BIO 214"):
        parts += [page("two"), h(1, f"{code} {COURSES[code][0]}")]
        parts += [(x[0], min(x[1] + 1, 3), x[2]) if x[0] == "h" else x for x in course(code) if x[0] != "page"]
    return parts


def documents():
    """{file name: (title, running header, parts)} for every document."""
    head = f"{COLLEGE} · "
    docs = {v[10]: (f"{c} {v[0]}", head + f"{c} course outline {YEAR}", course(c)) for c, v in COURSES.items()
            if not v[10].startswith("foundation")}
    docs.update({v[9]: ((f"Curriculum Vitae: {person(k)}" if v[9].endswith(".docx") else person(k)),
                        head + f"Department of {v[2]}", instructor(k)) for k, v in INSTRUCTORS.items()})
    docs.update({v[10]: (v[0], head + f"{v[0]} {YEAR}", programme(k)) for k, v in PROGRAMMES.items()})
    docs.update({
        "foundation-science-courses.pdf": ("Foundation Science Courses", head + "Chemistry and Biology", foundation()),
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
