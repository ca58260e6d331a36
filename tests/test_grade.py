"""grading/handin.py and grade.py: a correct hand-in gets full marks; an edited total, a fabricated row, a run on
another golden file and a corrupted archive are each caught, with a line that says why, and never crash the grader.
Against a reference run (the fixture's own results as the course's, grade.py --reference), rows fabricated in bulk
or one at a time cost their files' weeks; what rows claim (their counts, short answer and passages) is checked with
no model call.

Hand-ins are made on the fixture corpus by the lab's own entry points (retrieve.evaluate, verify_citations.main,
benchmark.main) with SCRIPTED_MODEL (tests/test_benchmark.py: an llm.ScriptedModel, never a language model, that
answers every JSON schema with a fixed valid reply); retrieval runs on the real fixture index. Re-runs go through
the same scripted model, which does not drift, so the test rubric allows no differing row (tolerance 0).

    pytest tests/test_grade.py    # ~30-50 s on 2 busy cores, most of it loading the embedding model
"""
import io
import json
import re
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

import benchmark
import citations
from lab.answers import exact_match, f1, normalize_answer
import harness
import llm
import retrieve
import verify_citations
from grading import checks, drift, figures, grade, handin, reference, rerun
from grading.claims import Chunks
from lab import cache
from test_benchmark import GENERATE_SYSTEM, SCRIPTED_MODEL
from layers import judge_answers

ROOT = Path(__file__).resolve().parent.parent
RUBRIC = {"rerun": {"name": "re-run", "points": 4, "tolerance": 0},
          "weeks": [{"week": "2", "script": "retrieve.py", "file": "results/retrieval.json", "command": "retrieve.py",
                     "points": {"valid": 1, "fingerprints": 1, "recomputed": 2},
                     "thresholds": [{"name": "fused recall@4 >= recall@2", "value": "recall.fused.4.all", "op": ">=",
                                     "than": "recall.fused.2.all", "points": 1}]},
                    {"week": "5", "script": "verify_citations.py", "file": "results/citations.json",
                     "points": {"valid": 1, "fingerprints": 1, "recomputed": 1},
                     "thresholds": [{"name": ">= 90% cited", "value": "cited_sentence_rate", "op": ">=", "than": 0.9,
                                     "points": 2}]},
                    {"week": "9", "script": "benchmark.py", "file": "results/benchmark.json",
                     "points": {"valid": 1, "fingerprints": 1, "recomputed": 2},
                     "thresholds": [{"name": "4 questions", "value": "table.all.single.questions", "op": ">=",
                                     "than": 4, "points": 1}]}]}
FULL = 1 + 1 + 2 + 1 + 1 + 1 + 1 + 2 + 1 + 1 + 2 + 1 + 4


@pytest.fixture(scope="module")
def lab(corpus, tmp_path_factory):
    """The fixture's results files as a student's commands write them, the rubric, and caches kept apart."""
    root = tmp_path_factory.mktemp("lab")
    mp = pytest.MonkeyPatch()

    mp.setattr(cache, "_MOVED", dict.fromkeys(rerun.SCRATCH, root / "cache"))   # the lab's answers, rows, verdicts
    golden, results = Path(__file__).parent / "fixtures" / "golden.json", root / "results"
    with llm.use_model(SCRIPTED_MODEL()):
        make_results(corpus, golden, results)
    (root / "rubric.json").write_text(json.dumps(RUBRIC))
    yield {"root": root, "results": results, "golden": golden, "rubric": root / "rubric.json"}
    mp.undo()


def make_results(corpus, golden, results):
    cache.write_json(results / "retrieval.json", retrieve.evaluate(retrieve.load_golden(golden), [2, 4], corpus))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sys, "argv", ["verify_citations.py", "--limit", "4", "--corpus", str(corpus), "--golden",
                                 str(golden), "--json", str(results / "citations.json")])
        verify_citations.main()
    benchmark.main(["--corpus", str(corpus), "--golden", str(golden), "--limit", "4", "--patterns", "seed,single",
                    "--json", str(results / "benchmark.json")])


def hand_in(lab, corpus, subs, student, files=None, name=None, golden=None, model=None):
    """handin.py on the given results files (default: the correct ones) -> the archive, in the folder subs."""
    files = files or [lab["results"] / n for n in ("retrieval.json", "citations.json", "benchmark.json")]
    out = subs / (name or f"handin-{student}.tar.gz")
    with llm.use_model(model or SCRIPTED_MODEL()):
        handin.main([*map(str, files), "--student", student, "--out", str(out), "--corpus", str(corpus),
                     "--golden", str(golden or lab["golden"])])
    return out


def edited(lab, name, change):
    """The correct results files, one of them a copy with change(data) applied, as a student editing it by hand
    would leave it."""
    data = json.loads((lab["results"] / name).read_text())
    change(data)
    path = lab["root"] / "edited" / change.__name__ / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return [path] + [lab["results"] / n for n in ("retrieval.json", "citations.json", "benchmark.json") if n != name]


def grade_all(lab, corpus, subs, rerun=20, reference=None, model=None, draws=False, extra=()):
    """grade.py over a folder of hand-ins -> ({student: results.json}, the scripted model's calls, out folder).
    reference: the course's reference results (default: the repository's results/, which hold no fixture row).
    draws: each student's files must hold their own draw of golden questions (else the course's default draw,
    which the fixture's results hold for every student)."""
    out, model = subs.parent / (subs.name + "-graded"), model or SCRIPTED_MODEL()
    with llm.use_model(model):
        grade.main([str(subs), "--rubric", str(lab["rubric"]), "--corpus", str(corpus), "--golden",
                    str(lab["golden"]), "--model", "scripted", "--rerun", str(rerun), "--out", str(out)]
                   + (["--reference", str(reference)] if reference else []) + ([] if draws else ["--default-draw"])
                   + list(extra))
    return ({p.parent.name: json.loads(p.read_text()) for p in out.glob("*/results.json")}, model.calls, out)


def items_of(result):
    return {t["name"]: t for t in result["tests"]}


def lost(result):
    return {t["name"]: t["output"] for t in result["tests"] if t["score"] < t["max_score"]}


def test_a_correct_hand_in_gets_full_marks_and_its_rows_are_really_re_run(lab, corpus, tmp_path):
    subs = tmp_path / "subs"
    archive = hand_in(lab, corpus, subs, "ada")
    hand_in(lab, corpus, subs, "bo", name="bo.zip")
    with tarfile.open(archive) as t:
        manifest = json.loads(t.extractfile("manifest.json").read())
    by_path = {Path(e["path"]).name: e for e in manifest["files"]}
    made_by = {n: (e["script"], e["command_from"]) for n, e in by_path.items()}
    assert made_by == {"retrieval.json": ("retrieve.py", "inferred"), "benchmark.json": ("benchmark.py", "file"),
                       "citations.json": ("verify_citations.py", "inferred")}
    assert by_path["citations.json"]["command"].startswith("python verify_citations.py --limit 4 ")
    assert by_path["citations.json"]["sha256"] == checks.sha256((lab["results"] / "citations.json").read_bytes())
    copy = shutil.copytree(corpus, tmp_path / "elsewhere" / "corpus", ignore=shutil.ignore_patterns(".*"))
    assert manifest["corpus"] == {"path": str(corpus.resolve()), **handin.corpus_fingerprint(copy)}
    assert manifest["corpus"]["files"] == 9
    assert manifest["golden"]["sha256"] == checks.sha256(lab["golden"].read_bytes())
    assert manifest["model"]["model"] == "scripted" and manifest["packages"]["torch"]["pinned"] == "2.13.0"
    assert re.fullmatch(r"[0-9a-f]{40}", manifest["git"]["commit"])

    results, calls, out = grade_all(lab, corpus, subs)
    assert set(results) == {"ada", "bo"}
    for r in results.values():
        assert not lost(r) and r["score"] == FULL == sum(t["max_score"] for t in r["tests"])
        assert all(set(t) == {"name", "score", "max_score", "output"} for t in r["tests"])
    first, second = (items_of(results[s])["re-run"]["output"].splitlines()[1:] for s in ("bo", "ada"))  # path order
    assert len(first) == 1 + 1 + 12 == len(second)   # the retrieval report, the draw, every row (citations.json's too)
    assert first[0].startswith("reproduced: retrieval.json, retrieve.py --eval whole (re-run in ")
    assert first[1].startswith("drawn: 12 of 12 runnable rows") and "of the 120 s budget" in first[1]
    assert all(line.startswith("reproduced: ") for line in first[2:])
    assert sum(line.startswith("reproduced: citations.json json fx-") for line in first) == 4
    assert all("shared with an earlier hand-in" in line for line in second[2:])
    systems = [messages[0]["content"] for messages, _ in calls]   # the re-runs asked the model again, answer and
    # verdicts: nothing read back from a cache
    assert GENERATE_SYSTEM in systems and judge_answers.SHARED_SYSTEM in systems
    table = (out / "class.csv").read_text().splitlines()
    assert table[0].startswith("student,score,max,week 2,week 5,week 9,re-run") and len(table) == 3
    assert f"| ada | {FULL} | {FULL} |" in (out / "class.md").read_text()


def test_an_edited_total_is_caught(lab, corpus, tmp_path):
    subs = tmp_path / "subs"

    def bump_table(d):
        d["table"]["all"]["single"]["answer_f1"] += 0.05

    def bump_citations(d):
        d["citation_recall"] = min(1.0, d["citation_recall"] + 0.01) if d["citation_recall"] < 1 else 0.99

    def bump_recall(d):
        d["recall"]["fused"]["4"]["all"] = round(d["recall"]["fused"]["4"]["all"] - 0.02, 3)
    for student, name, change in (("t1", "benchmark.json", bump_table), ("t2", "citations.json", bump_citations),
                                  ("t3", "retrieval.json", bump_recall)):
        hand_in(lab, corpus, subs, student, edited(lab, name, change))
    after = hand_in(lab, corpus, subs, "t4")   # edited after handin ran: the manifest's sha256 no longer matches
    with tarfile.open(after) as t:
        members = {m.name: t.extractfile(m).read() for m in t.getmembers()}
    name = next(n for n in members if n.endswith("citations.json"))
    members[name] = members[name].replace(b'"questions": 4', b'"questions": 5')
    with tarfile.open(after, "w:gz") as t:
        for n, data in members.items():
            info = tarfile.TarInfo(n)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    results = grade_all(lab, corpus, subs, rerun=0)[0]
    assert "table.all.single.answer_f1" in lost(results["t1"])["week 9 benchmark.py: recomputed"]
    assert "citation_recall" in lost(results["t2"])["week 5 verify_citations.py: recomputed"]
    assert "recall.fused.4.all" in lost(results["t3"])["week 2 retrieve.py: recomputed"]
    assert "edited after handin.py ran" in lost(results["t4"])["week 5 verify_citations.py: valid"]
    for r in results.values():   # nothing else lost
        assert len({n.split(":")[0] for n in lost(r)}) == 1, lost(r)


def test_a_verify_citations_summary_is_recomputed_from_its_rows(lab, corpus, tmp_path):
    """verify_citations.py --json holds its rows: citation precision edited to another share (no count it must be
    whole against) is caught by citations.summarize(rows); with the rows taken out (an older file) only the
    consistency checks apply: the same edit passes them, an edited citation recall does not."""
    subs, rows = tmp_path / "subs", json.loads((lab["results"] / "citations.json").read_text())["rows"]
    made = citations.summarize(rows["json"])
    other = 0.5 if made["citation_precision"] != 0.5 else 0.25

    def precision(d):
        d["citation_precision"] = other

    def precision_without_rows(d):
        precision(d)
        del d["rows"], d["settings"]

    def recall_without_rows(d):
        d["citation_recall"] = min(1.0, d["citation_recall"] + 0.01) if d["citation_recall"] < 1 else 0.99
        del d["rows"], d["settings"]
    for student, change in (("r1", precision), ("r2", precision_without_rows), ("r3", recall_without_rows)):
        hand_in(lab, corpus, subs, student, edited(lab, "citations.json", change))
    results = grade_all(lab, corpus, subs, rerun=0)[0]
    assert set(lost(results["r1"])) == {"week 5 verify_citations.py: recomputed"}
    why = lost(results["r1"])["week 5 verify_citations.py: recomputed"]
    assert f"json.citation_precision: {other!r} in the file, {made['citation_precision']!r} recomputed" in why
    assert not lost(results["r2"]) and results["r2"]["score"] == FULL - 4   # FULL holds the re-run's 4 points
    assert "citation_recall" in lost(results["r3"])["week 5 verify_citations.py: recomputed"]
    assert "not a whole count" in lost(results["r3"])["week 5 verify_citations.py: recomputed"]

    def rows_out(d):
        del d["rows"], d["settings"]
    hand_in(lab, corpus, tmp_path / "older", "r4", edited(lab, "citations.json", rows_out))
    older = items_of(grade_all(lab, corpus, tmp_path / "older")[0]["r4"])["re-run"]   # re-run: its totals bounded
    assert "reproduced: citations.json json totals against 4 re-run question(s)" in older["output"]
    assert older["score"] == older["max_score"]


def test_re_runs_are_drawn_across_files_within_the_budget_of_their_recorded_cost():
    """rerun.pick: each file's rows dealt in turn; a row is taken while its recorded seconds (answer + judge) fit
    what is left of the budget; an untimed row counts the median of the timed ones; rows dearer than the whole
    budget are returned to be named; when nothing fits, the cheapest drawn is re-run anyway."""
    def rows(file, seconds, k=5):
        return [{"file": file, "method": "m", "id": f"{file}-{i}",
                 "row": {} if seconds is None else {"seconds": seconds + i / 10, "judge_seconds": 1}} for i in range(k)]
    cheap, dear, untimed = rows("a.json", 10), rows("b.json", 200), rows("c.json", None)
    picked, spent, named = rerun.pick(cheap + dear + untimed, 3, 0, 0)   # no budget: one row of each file
    assert sorted(u["file"] for u in picked) == ["a.json", "b.json", "c.json"] and named == []
    for seed in range(8):
        picked, spent, named = rerun.pick(cheap + dear + untimed, 3, seed, 130)
        assert picked == rerun.pick(cheap + dear + untimed, 3, seed, 130)[0]   # seeded: the same draw again
        assert sorted(u["file"] for u in picked) == ["a.json", "a.json", "c.json"] and spent <= 130
        assert spent == pytest.approx(sum(rerun.cost(u) or 106.2 for u in picked))   # untimed: the timed median
        assert [u["id"] for u in named] == [f"b.json-{i}" for i in (4, 3, 2, 1, 0)]   # dearest first
    claims = [{**u, "row": {"seconds": 900 - i, "judge_seconds": 0}} for i, u in enumerate(cheap + untimed)]
    picked, spent, named = rerun.pick(claims, 3, 0, 60)
    assert [u["id"] for u in picked] == ["c.json-4"] and spent == 891 and len(named) == 9


def test_a_fabricated_row_is_caught(lab, corpus, golden_path, tmp_path):
    subs, gold = tmp_path / "subs", {g["id"]: g for g in json.loads(golden_path.read_text())}

    def right_answer(d):   # a wrong row made right, its table recomputed to match: only a re-run can tell
        row = next(r for r in d["rows"]["single"] if r["em"] == 0)
        row.update(answer=gold[row["id"]]["answer"], em=1.0, f1=1.0)
        d["table"] = harness.compare(d["rows"], tuple(d["table"]))

    def invented(d):       # a row for a question the golden set does not hold
        d["rows"]["single"][0] = {**d["rows"]["single"][0], "id": "fx-99"}
    def found_it(d):       # a retrieval row whose recall is raised, the table recomputed from the rows to match
        row = next(r for r in d["rows"] if r["recall"]["fused"]["2"] < 1)
        row["recall"]["fused"]["2"] = 1.0
        d.update(retrieve.recall_table(d["rows"], list(d["recall"]), [2, 4]))

    def raised(d):         # the same without the table: the rows no longer give it
        next(r for r in d["rows"] if r["recall"]["fused"]["2"] < 1)["recall"]["fused"]["2"] = 1.0
    hand_in(lab, corpus, subs, "f1", edited(lab, "benchmark.json", right_answer))
    hand_in(lab, corpus, subs, "f2", edited(lab, "benchmark.json", invented))
    hand_in(lab, corpus, subs, "f3", edited(lab, "retrieval.json", found_it))
    hand_in(lab, corpus, subs, "f4", edited(lab, "retrieval.json", raised))
    results = grade_all(lab, corpus, subs)[0]
    assert set(lost(results["f3"])) == {"re-run"}   # consistent: only re-running the question shows it
    assert re.search(r"differs: retrieval.json, retrieve.py --eval whole .*: fx-\d+: fused@2 1.0 -> 0.5",
                     lost(results["f3"])["re-run"])
    assert "recall.fused.2.all" in lost(results["f4"])["week 2 retrieve.py: recomputed"]
    # a rubric that lets a share of a report's questions move (an index built elsewhere) reproduces it, and says so
    lenient = tmp_path / "lenient.json"
    lenient.write_text(json.dumps({**RUBRIC, "rerun": {**RUBRIC["rerun"], "retrieval_tolerance": 0.5}}))
    hand_in(lab, corpus, tmp_path / "one", "f3", edited(lab, "retrieval.json", found_it))
    line = items_of(grade_all({**lab, "rubric": lenient}, corpus, tmp_path / "one")[0]["f3"])["re-run"]["output"]
    assert re.search(r"reproduced: retrieval.json, .*1\d\.\d% of its questions moved, within the 50%", line)
    rerun = items_of(results["f1"])["re-run"]
    assert rerun["score"] < rerun["max_score"] and re.search(r"differs: benchmark.json single fx-\d+.*: answer",
                                                              rerun["output"])
    # its totals agree with its rows, but the row still says a supported sentence states its answer (claims.py)
    assert set(lost(results["f1"])) == {"re-run"} | {f"week 9 benchmark.py: {k}" for k in (
        "valid", "fingerprints", "recomputed", "4 questions")}
    assert re.search(r"single fx-\d+: it says a supported sentence states its short answer '.+'; none does",
                     lost(results["f1"])["week 9 benchmark.py: recomputed"])
    assert "fx-99: no such question" in lost(results["f2"])["week 9 benchmark.py: recomputed"]


WEEK = {"citations.json": "week 5 verify_citations.py", "benchmark.json": "week 9 benchmark.py"}
WEEK_ITEMS = {"citations.json": ("valid", "fingerprints", "recomputed", ">= 90% cited"),
              "benchmark.json": ("valid", "fingerprints", "recomputed", "4 questions")}


def rows_of(result, name):
    """A file's row classes and claims as results.json's extra_data holds them."""
    return next(f for p, f in result["extra_data"]["rows"].items() if Path(p).name == name)


def made_right(rows, gold, keep=None):
    """Wrong rows given the golden answer and EM/F1 1.0, as a student fabricating them would; their claims
    (verdicts, passages) taken out, as rows written before rows carried them: only the reference can tell.
    -> the ids changed"""
    wrong = [r for r in rows if r["em"] == 0 and not r["idk"]][:keep]
    for r in wrong:
        r.update(answer=gold[r["id"]]["answer"], em=1.0, f1=1.0)
        for k in ("verdicts", "sources", "chunk_ids", "invalid_ids"):
            r.pop(k, None)
    return [r["id"] for r in wrong]


def test_rows_fabricated_in_bulk_lose_their_files_points_against_the_reference(lab, corpus, golden_path, tmp_path):
    """The issue's hand-in: every wrong row made right, totals recomputed, nothing inconsistent; graded against the
    reference (the fixture run's own results) every tampered file loses all its week's points, re-run or not;
    against a reference that does not hold them (the repository's results/) only the draw could catch them."""
    gold, changed = {g["id"]: g for g in json.loads(golden_path.read_text())}, {}

    def bulk_citations(d):
        changed["citations.json"] = made_right(d["rows"]["json"], gold)
        d.update({k: v for k, v in citations.summarize(d["rows"]["json"]).items() if k in d})

    def bulk_benchmark(d):
        changed["benchmark.json"] = [i for rs in d["rows"].values() for i in made_right(rs, gold)]
        d["table"] = harness.compare(d["rows"], tuple(d["table"]))
    subs = tmp_path / "subs"
    hand_in(lab, corpus, subs, "ok")
    files = edited(lab, "citations.json", bulk_citations)
    hand_in(lab, corpus, subs, "bulk", [files[0], edited(lab, "benchmark.json", bulk_benchmark)[0], files[1]])
    assert len(changed["citations.json"]) >= 2 and len(changed["benchmark.json"]) >= 3
    for rerun_n in (0, 1):
        results = grade_all(lab, corpus, subs, rerun=rerun_n, reference=lab["results"])[0]
        assert results["ok"]["score"] == FULL - 4 * (rerun_n == 0) and not lost(results["ok"])
        assert all(f["identical"] == sum(f[k] for k in reference.CLASSES) and f["claims"]["problems"] == 0
                   for f in results["ok"]["extra_data"]["rows"].values())
        why = lost(results["bulk"])
        for name, ids in changed.items():
            assert {f"{WEEK[name]}: {k}" for k in WEEK_ITEMS[name]} <= set(why), (name, why)
            assert re.match(rf"{len(ids)} row\(s\) differ from the course's reference run", why[f"{WEEK[name]}: valid"])
            f = rows_of(results["bulk"], name)
            assert f["not reproduced"] + f["not re-run"] == len(ids) and f["reproduced"] == f["unchecked"] == 0
            assert f["not reproduced"] <= 2 * rerun_n   # first, then the draw
            assert f["identical"] + len(ids) == sum(f[k] for k in reference.CLASSES)
        assert "week 2 retrieve.py: valid" not in why   # the untouched file keeps its points
    rerun_item = items_of(results["bulk"])["re-run"]["output"]
    assert re.search(r"^first: \d of \d+ row\(s\) that differ from the course's reference run re-run before the draw, "
                     r"recorded cost \d+ s; \d+ not \(--rerun 1", rerun_item, re.M), rerun_item
    assert "[differs from the reference: re-run first]" in rerun_item
    plain = grade_all(lab, corpus, tmp_path / "subs", rerun=0)[0]["bulk"]   # no reference row: the old hole
    assert not lost(plain) and rows_of(plain, "citations.json")["unchecked"] == 4


def test_one_fabricated_row_is_re_run_first_and_a_row_that_reproduces_keeps_its_points(lab, corpus, golden_path,
                                                                                          tmp_path):
    gold, ids = {g["id"]: g for g in json.loads(golden_path.read_text())}, []

    def one_row(d):
        ids.extend(made_right(d["rows"]["json"], gold, keep=1))
        d.update({k: v for k, v in citations.summarize(d["rows"]["json"]).items() if k in d})
    hand_in(lab, corpus, tmp_path / "subs", "one", edited(lab, "citations.json", one_row))
    r = grade_all(lab, corpus, tmp_path / "subs", rerun=0, reference=lab["results"])[0]["one"]
    assert set(lost(r)) == {f"week 5 verify_citations.py: {k}" for k in WEEK_ITEMS["citations.json"]}
    assert f"json {ids[0]} (not re-run): answer " in lost(r)["week 5 verify_citations.py: valid"]
    assert {k: v for k, v in rows_of(r, "citations.json").items() if k in reference.CLASSES} == {
        "identical": 3, "within": 0, "reproduced": 0, "not reproduced": 0, "not re-run": 1, "drift": 0, "unchecked": 0}
    r = grade_all(lab, corpus, tmp_path / "subs", rerun=1, reference=lab["results"])[0]["one"]
    assert rows_of(r, "citations.json")["not reproduced"] == 1   # the one re-run went to the differing row
    assert re.search(rf"^differs: citations.json json {ids[0]} .*answer '.+' -> 'Tomas Vell'.*re-run first\]$",
                     items_of(r)["re-run"]["output"], re.M)
    # an honest hand-in against a reference whose row differs (a reference made elsewhere): re-run, it reproduces
    ref = shutil.copytree(lab["results"], tmp_path / "ref")
    data = json.loads((ref / "citations.json").read_text())
    data["rows"]["json"][0].update(answer="Corran", em=0.0, f1=0.0)
    (ref / "citations.json").write_text(json.dumps(data))
    hand_in(lab, corpus, tmp_path / "honest", "ok")
    r = grade_all(lab, corpus, tmp_path / "honest", rerun=1, reference=ref)[0]["ok"]
    assert not lost(r) and r["score"] == FULL and rows_of(r, "citations.json")["reproduced"] == 1


FAKE = "It is known that the answer is"   # the sentence a smarter fabrication adds, stating the golden answer


def doubting_judge():
    """SCRIPTED_MODEL, but its judge says NO to the sentence FAKE begins: the grader's judge reading a passage that
    does not state what the sentence says."""
    def reply(messages, schema):
        if schema and "verdict" in schema.get("properties", {}) and FAKE in messages[-1]["content"]:
            return json.dumps({"verdict": "NO"})
        return SCRIPTED_MODEL().replies(messages, schema)   # a function: scripted_reply
    return llm.ScriptedModel(reply)


def test_honest_drift_keeps_its_points_and_fabricated_rows_do_not(lab, corpus, golden_path, tmp_path):
    """At --rerun 0 nothing is re-run. A row that differs from the reference only because the reference was made
    elsewhere passes drift.py's checks and keeps its points. Wrong rows made right (issue 34's hand-in, claims kept)
    fail on their own words; made right with their reply and a sentence stating the golden answer, cited to a
    passage that does not state it, they fail on the grader's judge."""
    gold = {g["id"]: g for g in json.loads(golden_path.read_text())}
    ref = shutil.copytree(lab["results"], tmp_path / "ref")
    data = json.loads((ref / "citations.json").read_text())
    data["rows"]["json"][0].update(answer="Corran", em=0.0, f1=0.0, right=False)   # the reference's, made elsewhere
    (ref / "citations.json").write_text(json.dumps(data))
    bench = json.loads((ref / "benchmark.json").read_text())
    assert {"seed", "single"} <= set(bench["rows"])
    for pattern in ("seed", "single"):   # one retrieval each (BM25-interleaved, fused): checked the same way
        bench["rows"][pattern][0].update(answer="Corran", em=0.0, f1=0.0)
    (ref / "benchmark.json").write_text(json.dumps(bench))
    hand_in(lab, corpus, tmp_path / "honest", "ok")
    r = grade_all(lab, corpus, tmp_path / "honest", rerun=0, reference=ref)[0]["ok"]
    assert not lost(r) and rows_of(r, "citations.json")["drift"] == 1 and rows_of(r, "benchmark.json")["drift"] == 2
    mine = json.loads((lab["results"] / "citations.json").read_text())["rows"]["json"][0]
    assert rows_of(r, "citations.json")["gains"] == int(bool(mine["right"]))   # right where the reference is wrong

    def right_by_hand(d, smarter=False):
        wrong = [r for r in d["rows"]["json"] if r["em"] == 0 and not r["idk"]]
        for r in wrong:
            g = gold[r["id"]]["answer"]
            r.update(answer=g, em=1.0, f1=1.0, right=True)
            r["features"]["stated"] = 0.0   # no sentence states it: the claims stay consistent
            if smarter:
                r["written"] = g
                r["verdicts"].append({"text": f"{FAKE} {g}.", "cites": [r["sources"][0]["id"]], "supported": True,
                                      "precise": {r["sources"][0]["id"]: True}, "how": "verdict"})
                r.update({k: r[k] + 1 for k in ("sentences", "cited", "supported", "citations", "precise")})
                r["features"]["stated"] = 1.0
        d.update({k: v for k, v in citations.summarize(d["rows"]["json"]).items() if k in d})
        return len(wrong)

    def plain(d):
        right_by_hand(d)

    def smarter(d):
        assert right_by_hand(d, smarter=True) >= 1
    for change, why in ((plain, "is not what its recorded reply"), (smarter, "the grader's judge does not")):
        subs = tmp_path / change.__name__
        hand_in(lab, corpus, subs, change.__name__, edited(lab, "citations.json", change))
        r = grade_all(lab, corpus, subs, rerun=0, reference=lab["results"], model=doubting_judge())[0][change.__name__]
        assert "week 5 verify_citations.py: valid" in lost(r), change.__name__
        assert "not honest drift: " in lost(r)["week 5 verify_citations.py: valid"]
        assert why in lost(r)["week 5 verify_citations.py: valid"], lost(r)["week 5 verify_citations.py: valid"]
        assert rows_of(r, "citations.json")["drift"] == 0


FILES = ("retrieval.json", "citations.json", "benchmark.json")


def test_each_student_runs_a_draw_of_their_own_and_a_copied_hand_in_loses_it(lab, corpus, tmp_path, monkeypatch,
                                                                               capsys):
    """alice runs the weeks' commands with RAG_STUDENT=alice: her own draw of golden questions, full marks. The
    default draw's results (what the repository commits) handed in as dave's, and alice's hand-in renamed erin's,
    lose the weeks whose questions are drawn (citations, benchmark); week 2's report evaluates every question, the
    same for all, and is kept."""
    golden = json.loads(lab["golden"].read_text())
    draws = {who: checks.sampled_ids(golden, 4, who)[0] for who in ("", "alice", "dave", "erin")}
    assert len({tuple(d) for d in draws.values()}) == 4, draws   # four different draws of 4 of the 6
    mine = tmp_path / "alice-results"
    monkeypatch.setenv("RAG_STUDENT", "alice")
    with llm.use_model(SCRIPTED_MODEL()):
        make_results(corpus, lab["golden"], mine)
    monkeypatch.delenv("RAG_STUDENT")
    assert [r["id"] for r in json.loads((mine / "citations.json").read_text())["rows"]["json"]] == draws["alice"]
    subs = tmp_path / "subs"
    hand_in(lab, corpus, subs, "alice", [mine / n for n in FILES])
    assert "hold the course's default draw" not in capsys.readouterr().out
    hand_in(lab, corpus, subs, "dave")   # dave ran without RAG_STUDENT: hand-in says so, and what to run again
    said = capsys.readouterr().out
    assert "2 file(s) hold the course's default draw of questions, not dave's" in said, said
    assert "export RAG_STUDENT=dave" in said and "python benchmark.py" in said
    shutil.copy(subs / "handin-alice.tar.gz", subs / "handin-erin.tar.gz")
    results = grade_all(lab, corpus, subs, rerun=0, draws=True)[0]
    assert results["alice"]["score"] == FULL - 4 and not lost(results["alice"])
    for who in ("dave", "erin"):
        why = lost(results[who])
        assert {f"{WEEK[n]}: valid" for n in ("citations.json", "benchmark.json")} <= set(why), (who, why)
        assert f"{who}'s draw of the golden set (RAG_STUDENT={who})" in why["week 5 verify_citations.py: valid"]
        assert not any(k.startswith("week 2") for k in why)


def test_a_row_whose_passages_are_not_the_course_corpus_s_chunks_is_caught(lab, corpus, tmp_path):
    """claims.py, no model call: a chunk ID no document of the corpus has, and a chunk whose text is not the
    corpus's (its sha256), each cost the file; honest rows' passages are the fixture corpus's chunks."""
    def nowhere(d):
        row = d["rows"]["json"][0]
        row["sources"][0]["chunk_id"] = row["chunk_ids"][0] = "nowhere#0"

    def other_text(d):
        d["rows"]["single"][0]["sources"][1]["sha"] = "0" * 16
    subs = tmp_path / "subs"
    hand_in(lab, corpus, subs, "c1", edited(lab, "citations.json", nowhere))
    hand_in(lab, corpus, subs, "c2", edited(lab, "benchmark.json", other_text))
    hand_in(lab, corpus, subs, "ok")
    results = grade_all(lab, corpus, subs, rerun=0)[0]   # no reference row: the claims alone
    assert rows_of(results["ok"], "citations.json")["claims"] == {"checked": 4, "without": 0, "problems": 0}
    assert not lost(results["ok"])
    why = lost(results["c1"])
    assert set(why) == {f"week 5 verify_citations.py: {k}" for k in WEEK_ITEMS["citations.json"]}
    assert "passage S1: nowhere#0 is not a chunk of the course corpus (no document 'nowhere')" in why[
        "week 5 verify_citations.py: recomputed"]
    why = lost(results["c2"])["week 9 benchmark.py: valid"]
    assert re.search(r"1 problem\(s\) with what its rows claim .*single fx-\d+: passage S2: [\w-]+#\d+: its text "
                     r"\(sha256 0{16}\) is not the course corpus's \([0-9a-f]{16}\)", why)


def test_a_row_whose_short_answer_is_in_no_sentence_is_caught(lab, corpus, golden_path, tmp_path):
    """The row says a supported sentence states its answer (features.stated, answer_check's part), but none of its
    sentences does: answer, EM, F1 and totals all agree, only its own sentences tell. Counts its verdicts do not
    give are caught the same way."""
    gold = {g["id"]: g for g in json.loads(golden_path.read_text())}

    def unstated(d):
        said = lambda r: normalize_answer(" ".join(v["text"] for v in r["verdicts"]))
        row = next(r for r in d["rows"]["json"] if r["features"]["stated"] == 1.0)
        other = next(g["answer"] for g in gold.values() if normalize_answer(g["answer"]) not in said(row))
        row.update(answer=other, em=exact_match(other, gold[row["id"]]), f1=f1(other, gold[row["id"]]))
        d.update({k: v for k, v in citations.summarize(d["rows"]["json"]).items() if k in d})

    def one_more_supported(d):
        row = next(r for r in d["rows"]["json"] if r["supported"])   # a count its verdicts do not give
        row["supported"] -= 1
        d.update({k: v for k, v in citations.summarize(d["rows"]["json"]).items() if k in d})
    subs = tmp_path / "subs"
    hand_in(lab, corpus, subs, "s1", edited(lab, "citations.json", unstated))
    hand_in(lab, corpus, subs, "s2", edited(lab, "citations.json", one_more_supported))
    results = grade_all(lab, corpus, subs, rerun=0)[0]
    for student, words in (("s1", r"json fx-\d+: it says a supported sentence states its short answer '.+'; none "
                                  r"does"), ("s2", r"json fx-\d+: supported \d+, its verdicts say \d+")):
        why = lost(results[student])
        assert set(why) == {f"week 5 verify_citations.py: {k}" for k in WEEK_ITEMS["citations.json"]}, student
        assert re.search(words, why["week 5 verify_citations.py: recomputed"]), why
        assert rows_of(results[student], "citations.json")["claims"]["problems"] == 1


def test_the_chance_that_fabricated_rows_escape_a_random_draw():
    """reference.escape: hypergeometric, C(n-k, r) / C(n, r)."""
    assert reference.escape(30, 1, 3) == pytest.approx(0.9)
    assert reference.escape(30, 11, 3) == pytest.approx(19 * 18 * 17 / (30 * 29 * 28))
    assert reference.escape(30, 5, 0) == 1 and reference.escape(30, 1, 30) == 0 and reference.escape(4, 5, 1) == 0
    rows = [{"method": "m", "id": str(i), "class": "unchecked" if i < 8 else "identical"} for i in range(10)]
    line = reference.escape_line(rows, {("m", "0"), ("m", "9")})
    assert line.startswith("8 row(s) the reference does not hold, 1 of them re-run at random") and \
        "0.88 (k=1)" in line and "0.62 (k=3)" in line


def test_a_run_on_another_golden_file_is_caught(lab, corpus, tmp_path):
    other = tmp_path / "other_golden.json"
    items = json.loads(lab["golden"].read_text())
    other.write_text(json.dumps(items + [{**items[0], "id": "fx-7", "question": "Who built Ashford Bridge?"}]))
    report = retrieve.evaluate(retrieve.load_golden(other), [2, 4], corpus)

    def on_other_golden(d):
        d.update(report)

    def on_other_golden_without_rows(d):   # a file written before retrieve.py --eval held its rows
        d.update({k: v for k, v in report.items() if k != "rows"})
        del d["rows"]
    hand_in(lab, corpus, tmp_path / "subs", "g1", edited(lab, "retrieval.json", on_other_golden), golden=other)
    hand_in(lab, corpus, tmp_path / "subs", "g2", edited(lab, "retrieval.json", on_other_golden_without_rows))
    results = grade_all(lab, corpus, tmp_path / "subs", rerun=0)[0]
    why = lost(results["g1"])
    assert all("golden" in why[f"week {w}: fingerprints"] for w in ("2 retrieve.py", "5 verify_citations.py",
                                                                      "9 benchmark.py"))
    assert "run on another golden" in why["week 2 retrieve.py: fingerprints"]
    assert "rows.6: 'fx-7' is not a golden question" in why["week 2 retrieve.py: recomputed"]
    assert set(lost(results["g2"])) == {"week 2 retrieve.py: recomputed"}   # its manifest names the course's golden
    assert "matches no part of the golden set" in lost(results["g2"])["week 2 retrieve.py: recomputed"]


def test_a_corrupted_archive_or_broken_file_gets_a_line_and_zero_never_a_crash(lab, corpus, tmp_path):
    subs = tmp_path / "subs"
    good = hand_in(lab, corpus, subs, "ok")
    (subs / "handin-cut.tar.gz").write_bytes(good.read_bytes()[:len(good.read_bytes()) // 2])
    (subs / "handin-junk.zip").write_bytes(b"not a zip file at all")
    folder = subs / "folder"     # a folder hand-in without a manifest: one bad JSON file, the others missing
    folder.mkdir()
    (folder / "citations.json").write_text('{"questions": 4,')
    results = grade_all(lab, corpus, subs, rerun=1)[0]
    assert results["ok"]["score"] == FULL
    for name, words in (("cut", "cannot open handin-cut.tar.gz"), ("junk", "cannot open handin-junk.zip")):
        assert results[name]["score"] == 0 and all(o.startswith(words) for o in lost(results[name]).values())
    why = lost(results["folder"])
    assert results["folder"]["score"] == 0
    assert why["week 5 verify_citations.py: valid"].startswith("1 problem(s): bad JSON")
    assert why["week 2 retrieve.py: valid"].startswith("missing: no results file of retrieve.py")
    assert "no manifest.json" in why["week 5 verify_citations.py: fingerprints"]


def test_a_recorded_command_names_its_script_by_path_or_module():
    for command, script in [("python benchmark.py --limit 4", "benchmark.py"),
                            ("python -m experiments.chain_eval --split dev", "experiments/chain_eval.py")]:
        assert checks.infer_script({"run": {"command": command}}) == (script, command, "file")
    assert checks.infer_script({"recall": {}, "n": 3, "split": "dev"}, "r.json")[:2] == (
        "experiments/chain_eval.py", "python -m experiments.chain_eval --split dev --json r.json")


def test_the_default_rubric_matches_the_readme_and_reads_the_committed_results():
    """rubric.json: usable, each week's script in that week of the file table (labs/files.md) and in that week's row
    of the README's week table, and every bar's paths found in the lab's own committed results file (so an edit to
    a script's output shows here)."""
    rubric = json.loads((ROOT / "rubric.json").read_text())
    assert handin.rubric_problems(rubric) == []
    table = (ROOT / "labs" / "files.md").read_text()
    weeks = {f: line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ")
             for f in re.findall(r"`(\w+\.py)`", line)}
    readme_weeks = {f: line.split("|")[1].strip() for line in (ROOT / "README.md").read_text().splitlines()
                    if re.match(r"\| (\d+|data) \|", line) for f in re.findall(r"`(\w+\.py)`", line)}
    for w in rubric["weeks"]:
        assert weeks[w["script"]] == w["week"], w["script"]
        assert readme_weeks[w["script"]] == w["week"], w["script"]
        data = json.loads((ROOT / w["file"]).read_text())
        assert checks.infer_script(data)[0] == w["script"]
        for t in w["thresholds"]:
            than = t["than"] if isinstance(t["than"], list) else [t["than"]]
            assert handin.lookup(data, t["value"]) is not None and all(
                isinstance(x, (int, float)) or handin.lookup(data, x) is not None for x in than), t["name"]
    assert handin.rubric_problems({"weeks": [{"week": "2", "points": {"speed": 1}}]})  # a broken rubric is named


@pytest.mark.slow
@pytest.mark.engine
def test_real_engine_a_student_row_re_run_by_the_grader_reproduces(corpus, golden_path, tmp_path):
    """The real embedded engine (the wheel, as a graded run should use): a benchmark row made in one process is
    re-made by grading/grade.py in another, every model call recomputed, and compared field by field (~2 min)."""
    import os
    import subprocess
    env = {**os.environ, "RAG_INDEX_DIR": str(tmp_path / "index"), "RAG_LLM": "embedded", "RAG_ENGINE_BUILD": "wheel",
           "RAG_STUDENT": "r"}   # student r's draw, graded as r (r.zip)
    (tmp_path / "rubric.json").write_text(json.dumps(RUBRIC))
    out, rubric = str(tmp_path / "s" / "r.zip"), str(tmp_path / "rubric.json")
    for cmd in (["benchmark.py", "--limit", "1", "--patterns", "single", "--json", str(tmp_path / "b.json")],
                ["-m", "grading.handin", str(tmp_path / "b.json"), "--student", "r", "--out", out],
                ["-m", "grading.grade", str(tmp_path / "s"), "--rerun", "1", "--rubric", rubric]):
        args = [sys.executable, *cmd, "--corpus", str(corpus), "--golden", str(golden_path)]
        p = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads((tmp_path / "s-graded" / "r" / "results.json").read_text())
    assert [line.split(":")[0] for line in items_of(r)["re-run"]["output"].splitlines()[1:]] == ["drawn", "reproduced"]
    assert not {f"week 9 benchmark.py: {k}" for k in ("valid", "fingerprints", "recomputed")} & set(lost(r))


@pytest.mark.slow
@pytest.mark.engine
def test_real_engine_a_drifted_row_keeps_its_points_without_a_re_run(corpus, golden_path, tmp_path):
    """The real embedded engine: student r's verify_citations.py rows, graded at --rerun 0 against a reference
    whose first row differs (as one made on another build would), in another process with caches of its own: the
    row passes grading/drift.py's checks, the grader's judge reading its citations again, and keeps its points."""
    import os
    import subprocess
    base = {**os.environ, "RAG_LLM": "embedded", "RAG_STUDENT": "r"}
    (tmp_path / "rubric.json").write_text(json.dumps(RUBRIC))
    made, ref = tmp_path / "c.json", tmp_path / "ref"
    run = lambda cmd, index: subprocess.run([sys.executable, *cmd, "--corpus", str(corpus), "--golden",
                                             str(golden_path)], cwd=ROOT, capture_output=True, text=True,
                                            timeout=900, env={**base, "RAG_INDEX_DIR": str(tmp_path / index)})
    for cmd in (["verify_citations.py", "--limit", "2", "--json", str(made)],
                ["-m", "grading.handin", str(made), "--student", "r", "--out", str(tmp_path / "s" / "r.zip")]):
        assert (p := run(cmd, "student")).returncode == 0, p.stderr[-2000:]
    data = json.loads(made.read_text())
    data["rows"]["json"][0].update(answer="Corran", em=0.0, f1=0.0)   # the course's row, made elsewhere
    ref.mkdir()
    (ref / "c.json").write_text(json.dumps(data))
    p = run(["-m", "grading.grade", str(tmp_path / "s"), "--rerun", "0", "--rubric", str(tmp_path / "rubric.json"),
             "--reference", str(ref)], "grader")
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads((tmp_path / "s-graded" / "r" / "results.json").read_text())
    assert not [k for k in lost(r) if k.startswith("week 4")], lost(r)
    assert rows_of(r, "c.json")["drift"] == 1 and rows_of(r, "c.json")["identical"] == 1


def test_claims_know_the_index_chunk_ids_of_a_pdf():
    """A PDF's chunks are `doc-pdf#p<page>-<n>` (vector_index.chunk_records): the claims check takes the same IDs."""
    from grading.claims import Chunks, passages
    chunks = Chunks(ROOT / "tests" / "fixtures" / "documents")
    ids, _, _ = chunks.of("handbook-pdf", "titled")
    row = {"sources": [{"id": "S1", "chunk_id": "handbook-pdf#p2-0", "sha": ids["handbook-pdf#p2-0"]},
                       {"id": "S2", "chunk_id": "handbook-pdf#p9-0", "sha": None}]}
    assert passages(row, chunks, "titled") == ["passage S2: handbook-pdf#p9-0: handbook-pdf has 3 titled chunk(s)"]


def test_router_eval_s_sampled_questions_are_the_student_s_draw():
    """The committed router_eval.py file holds the default draw: it passes as the course's, and is another's draw
    for alice (each mode's 50 multi-hop questions, the LLM router's 60)."""
    data = json.loads((ROOT / "results" / "router_eval.json").read_text())
    course = checks.Golden(retrieve.load_golden(ROOT / "golden.json"))
    assert figures.router_draws(data["routes"], data["rows"], course) == []
    theirs = figures.router_draws(data["routes"], data["rows"], course.of("alice"))
    assert len(theirs) == len(data["rows"]) + 1 and all("alice's draw" in p for p in theirs)


def test_rows_of_patterns_that_write_their_own_queries_drift_honestly_by_their_recorded_retrievals(
        lab, corpus, golden_path, tmp_path):
    """A pattern that asks the model for queries on the way (iterative) records each retrieval in its row; the grader
    re-runs them. A differing row whose passages they find keeps its points; one given a passage none of them finds
    (a corpus chunk, its text true, picked by hand) does not."""
    with llm.use_model(SCRIPTED_MODEL()):
        benchmark.main(["--corpus", str(corpus), "--golden", str(golden_path), "--limit", "2", "--patterns",
                        "iterative", "--json", str(tmp_path / "benchmark.json")])
    data = json.loads((tmp_path / "benchmark.json").read_text())
    course = handin.Course(corpus, golden_path, "scripted", "-")
    chunks, gold = Chunks(corpus), {g["id"]: g for g in json.loads(golden_path.read_text())}
    row = data["rows"]["iterative"][0]
    assert row["retrievals"] and all(r["chunks"] for r in row["retrievals"])
    with llm.use_model(SCRIPTED_MODEL()):
        assert drift.honest("benchmark.py", row, gold[row["id"]], course, chunks, method="iterative") == []
        found = {c for r in row["retrievals"] for c in r["chunks"]}
        chunks.of(row["sources"][0]["chunk_id"].rpartition("#")[0], "titled")   # chunks.docs read
        every = sorted(c for d in chunks.docs for c in chunks.of(d, "titled")[0])
        other = next(c for c in every if c not in found)
        fake = json.loads(json.dumps(row))
        fake["sources"][0].update(chunk_id=other, sha=citations.text_sha(chunks.text(other, "titled")))
        fake["chunk_ids"][0] = other
        why = drift.honest("benchmark.py", fake, gold[row["id"]], course, chunks, method="iterative")
    assert why and "recorded retrievals find here" in why[0], why
    with llm.use_model(SCRIPTED_MODEL()):   # GraphRAG's passages come from the model's graph: check 1 is left out,
        assert drift.honest("benchmark.py", row, gold[row["id"]], course, chunks, method="graph_local") == []
        why = drift.honest("benchmark.py", fake, gold[row["id"]], course, chunks, method="graph_local")
    assert why and "the grader's judge does not" in why[0], why   # the judge still reads the passage it cites
    old = {k: v for k, v in row.items() if k != "retrievals"}
    assert "records no retrievals" in drift.honest("benchmark.py", old, gold[row["id"]], course, chunks,
                                                   method="iterative")[0]


def test_router_eval_rows_drift_honestly_and_edited_ones_do_not(corpus, golden_path):
    """router_eval.py's rows carry no verdicts: their answer, scores, passages and recorded retrievals are checked."""
    import router_eval
    course = handin.Course(corpus, golden_path, "scripted", "-")
    item = next(g for g in json.loads(golden_path.read_text()) if g["type"] == "multi")
    s = {"corpus": str(corpus), "chunker": "titled", "final_k": 4, "k": 3, "max_hops": 2}
    with llm.use_model(SCRIPTED_MODEL()):
        row = {**router_eval.run_mode("iterative", item, s), "source": item["source"], "id": item["id"]}
        row = json.loads(json.dumps(row))
        assert len(set(row["retrieved_ids"])) > 1 and row["retrievals"]
        assert drift.honest("router_eval.py", row, item, course, None, method="iterative") == []
        for change, why in (({"f1": 1.0 - row["f1"]}, "f1 "), ({"retrieved_ids": row["retrieved_ids"][:1]},
                                                              "not among what it says it retrieved"),
                            ({"retrievals": [{**row["retrievals"][0], "k": 1}]}, "recorded retrievals")):
            got = drift.honest("router_eval.py", {**row, **change}, item, course, None, method="iterative")
            assert got and why in " ".join(got), (change, got)


def test_the_reference_build_runs_each_graded_command_on_the_pool_or_each_student_s_draw(tmp_path, capsys):
    """grading.reference --build: the whole pool sets every sample size to 0 (benchmark.py's default too); per
    student, each command runs under RAG_STUDENT into <student>.<file>, retrieve.py's report once; a file already
    made is kept."""
    cmd = reference.reference_command
    assert cmd("python flare.py --eval 20 --json results/flare_eval.json", tmp_path / "f.json", True) == [
        "flare.py", "--eval", "0", "--json", str(tmp_path / "f.json")]
    assert cmd("python retrieve.py --eval --json results/retrieval.json", tmp_path / "r.json", True) == [
        "retrieve.py", "--eval", "--json", str(tmp_path / "r.json")]
    assert cmd("python benchmark.py", tmp_path / "b.json", True) == ["benchmark.py", "--json", str(tmp_path / "b.json"),
                                                                    "--limit", "0"]
    assert cmd("python router_eval.py --limit 50 --router-limit 60", tmp_path / "x.json", False)[1:5] == [
        "--limit", "50", "--router-limit", "60"]
    rubric = json.loads((ROOT / "rubric.json").read_text())
    (tmp_path / "ada.flare_eval.json").write_text("{}")
    assert reference.build(tmp_path, rubric, ("ada", "bo"), {"2", "7"}, dry=True) == 0
    said = capsys.readouterr().out
    assert said.count("retrieve.py --eval") == 1 and "RAG_STUDENT=bo python flare.py --eval 20" in said
    assert f"kept {tmp_path / 'ada.flare_eval.json'}" in said and "RAG_STUDENT=ada python crag.py" in said
    assert reference.build(tmp_path / "pool", rubric, (), {"5"}, dry=True) == 0
    said = capsys.readouterr().out
    assert "verify_citations.py --limit 0" in said and "h of model time" in said


def test_a_hand_in_made_with_another_model_keeps_its_rows_points_and_says_why_it_loses_the_fingerprint(
        lab, corpus, golden_path, tmp_path):
    """Answers from another model (an Ollama model's name, a scripted stand-in here): its rows that differ from the
    reference pass as honest drift, none of whose checks reads the model's name; the fingerprint item of each week
    is lost, with a line naming both models."""
    class OtherModel(llm.ScriptedModel):   # a scripted model under an Ollama model's name, not a language model
        name = "llama3.1:8b"
    ref = shutil.copytree(lab["results"], tmp_path / "ref")
    data = json.loads((ref / "citations.json").read_text())
    data["rows"]["json"][0].update(answer="Corran", em=0.0, f1=0.0)   # the course's answer differs from this model's
    (ref / "citations.json").write_text(json.dumps(data))
    mine, other = tmp_path / "mine", OtherModel(SCRIPTED_MODEL().replies)
    with llm.use_model(other):
        make_results(corpus, lab["golden"], mine)
        assert llm.engine_info()["model"] == "llama3.1:8b"
    hand_in(lab, corpus, tmp_path / "subs", "ollie", [mine / n for n in FILES], model=other)
    r = grade_all(lab, corpus, tmp_path / "subs", rerun=0, reference=ref)[0]["ollie"]
    gone = lost(r)
    assert all(k.endswith(": fingerprints") for k in gone), gone   # valid, recomputed and the bars are kept
    assert len(gone) == 3   # weeks 2, 4 and 9
    assert all("'llama3.1:8b', the course's 'scripted'" in v for v in gone.values())
    assert rows_of(r, "citations.json")["drift"] == 1


def test_re_runs_of_honestly_drifted_rows_make_the_course_s_answer_and_do_not_cost_the_re_run_item(
        lab, corpus, tmp_path):
    """A hand-in made where the model's numerics differ: a scripted stand-in that writes another short answer than
    the course's scripted model. Its rows differ from the reference; re-run here they make the reference's answer,
    not the row's; the rows pass drift.py's checks, so the week and the re-run item keep their points."""
    def drifting(messages, schema):
        reply = SCRIPTED_MODEL().replies(messages, schema)
        if schema and {"sentences", "answer"} <= set(schema.get("properties", {})):
            return json.dumps({**json.loads(reply), "answer": "Corran"})
        return reply
    mine = tmp_path / "mine"
    with llm.use_model(llm.ScriptedModel(drifting)), cache.moved(rerun.SCRATCH, tmp_path / "cache"):   # its own
        make_results(corpus, lab["golden"], mine)
    answers = lambda folder: [r["answer"] for r in json.loads((folder / "citations.json").read_text())["rows"]["json"]]
    assert answers(mine) != answers(lab["results"])
    hand_in(lab, corpus, tmp_path / "subs", "drew", [mine / n for n in FILES])
    r = grade_all(lab, corpus, tmp_path / "subs", rerun=20, reference=lab["results"])[0]["drew"]
    assert not lost(r), lost(r)
    head = items_of(r)["re-run"]["output"].splitlines()[0]
    assert "drifted from it honestly" in head, head
    assert rows_of(r, "citations.json")["drift"] >= 1


def test_re_runs_made_in_parallel_come_out_as_they_do_one_at_a_time(lab, corpus, tmp_path):
    """--jobs 4 re-runs the drawn rows four at a time (a model server that takes parallel requests); every row's
    outcome, and the item's score, are those of --jobs 1; a row two files share is still re-run once."""
    hand_in(lab, corpus, tmp_path / "subs", "ada")
    seen, shared = {}, {}
    for jobs in (1, 4):
        r = grade_all(lab, corpus, tmp_path / "subs", extra=["--jobs", str(jobs)])
        lines = items_of(r[0]["ada"])["re-run"]["output"].splitlines()
        note = r" \((re-run in \d+ s|re-run once this grading run, shared with an earlier hand-in or file)\)"
        seen[jobs] = [re.sub(note, "", line) for line in lines], r[0]["ada"]["score"]   # which of two is shared varies
        shared[jobs] = sum("shared with an earlier" in line for line in lines)
    assert seen[1] == seen[4] and seen[1][1] == FULL and shared[1] == shared[4] >= 1
    assert sum(line.startswith("reproduced: ") for line in seen[4][0]) == 13


def test_a_recorded_retrieval_of_the_web_stand_in_is_re_run_there_and_any_other_on_the_course_corpus(corpus,
                                                                                                     golden_path):
    """CRAG's local web search retrieves from web_standin/ and names its chunks "web:..."; every other recorded
    folder (the student's copy of the corpus, anywhere) is the course corpus here."""
    course = handin.Course(corpus, golden_path, "scripted", "-")
    assert drift.folder_of("web_standin", course) == ((ROOT / "web_standin").resolve(), "web:")
    for elsewhere in ("corpus", "/home/ada/lab/corpus", "catalogue/docs", None):
        assert drift.folder_of(elsewhere, course) == (course.corpus, "")


def test_a_table_is_checked_on_the_figures_it_holds_and_a_column_added_later_is_not_asked():
    from grading.checks import held
    from grading.figures import differences
    made = {"all": {"seed": {"answer_f1": 0.5, "verified_wrong": 0}}, "single": {"seed": {"answer_f1": 0.4}}}
    old = {"all": {"seed": {"answer_f1": 0.5}}, "single": {"seed": {"answer_f1": 0.4}}}
    assert differences(old, held(made, old), "table") == []                      # an older file: no new column
    assert differences(old, made, "table")                                       # (asked whole, it would differ)
    wrong = {"all": {"seed": {"answer_f1": 0.9}}, "single": {"seed": {"answer_f1": 0.4}}}
    assert differences(wrong, held(made, wrong), "table") == [
        "table.all.seed.answer_f1: 0.9 in the file, 0.5 recomputed"]
    assert differences({"all": {}}, held(made, {"all": {}}), "table")          # a missing split or method still shows
