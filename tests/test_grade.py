"""grading/handin.py and grade.py: a correct hand-in gets full marks; an edited total, a fabricated row, a run on
another golden file and a corrupted archive are each caught, with a line that says why, and never crash the grader.

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
import harness
import judge
import llm
import retrieve
import verify_citations
from grading import checks, grade, handin, rerun
from lab import cache
from test_benchmark import GENERATE_SYSTEM, SCRIPTED_MODEL

ROOT = Path(__file__).resolve().parent.parent
RUBRIC = {"rerun": {"name": "re-run", "points": 4, "tolerance": 0},
          "weeks": [{"week": "2", "script": "retrieve.py", "file": "results/retrieval.json", "command": "retrieve.py",
                     "points": {"valid": 1, "fingerprints": 1, "recomputed": 2},
                     "thresholds": [{"name": "fused recall@4 >= recall@2", "value": "recall.fused.4.all", "op": ">=",
                                     "than": "recall.fused.2.all", "points": 1}]},
                    {"week": "4", "script": "verify_citations.py", "file": "results/citations.json",
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


def hand_in(lab, corpus, subs, student, files=None, name=None, golden=None):
    """handin.py on the given results files (default: the correct ones) -> the archive, in the folder subs."""
    files = files or [lab["results"] / n for n in ("retrieval.json", "citations.json", "benchmark.json")]
    out = subs / (name or f"handin-{student}.tar.gz")
    with llm.use_model(SCRIPTED_MODEL()):
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


def grade_all(lab, corpus, subs, rerun=20):
    """grade.py over a folder of hand-ins -> ({student: results.json}, the scripted model's calls, out folder)."""
    out, model = subs.parent / (subs.name + "-graded"), SCRIPTED_MODEL()
    with llm.use_model(model):
        grade.main([str(subs), "--rubric", str(lab["rubric"]), "--corpus", str(corpus), "--golden",
                    str(lab["golden"]), "--model", "scripted", "--rerun", str(rerun), "--out", str(out)])
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
    assert GENERATE_SYSTEM in systems and judge.SHARED_SYSTEM in systems   # verdicts: nothing read back from a cache
    table = (out / "class.csv").read_text().splitlines()
    assert table[0].startswith("student,score,max,week 2,week 4,week 9,re-run") and len(table) == 3
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
    assert "citation_recall" in lost(results["t2"])["week 4 verify_citations.py: recomputed"]
    assert "recall.fused.4.all" in lost(results["t3"])["week 2 retrieve.py: recomputed"]
    assert "edited after handin.py ran" in lost(results["t4"])["week 4 verify_citations.py: valid"]
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
    assert set(lost(results["r1"])) == {"week 4 verify_citations.py: recomputed"}
    why = lost(results["r1"])["week 4 verify_citations.py: recomputed"]
    assert f"json.citation_precision: {other!r} in the file, {made['citation_precision']!r} recomputed" in why
    assert not lost(results["r2"]) and results["r2"]["score"] == FULL - 4   # FULL holds the re-run's 4 points
    assert "citation_recall" in lost(results["r3"])["week 4 verify_citations.py: recomputed"]
    assert "not a whole count" in lost(results["r3"])["week 4 verify_citations.py: recomputed"]

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
    assert set(lost(results["f1"])) == {"re-run"}   # its totals agree with its rows
    assert "fx-99: no such question" in lost(results["f2"])["week 9 benchmark.py: recomputed"]


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
    assert all("golden" in why[f"week {w}: fingerprints"] for w in ("2 retrieve.py", "4 verify_citations.py",
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
    assert why["week 4 verify_citations.py: valid"].startswith("1 problem(s): bad JSON")
    assert why["week 2 retrieve.py: valid"].startswith("missing: no results file of retrieve.py")
    assert "no manifest.json" in why["week 4 verify_citations.py: fingerprints"]


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
    env = {**os.environ, "RAG_INDEX_DIR": str(tmp_path / "index"), "RAG_LLM": "embedded", "RAG_ENGINE_BUILD": "wheel"}
    (tmp_path / "rubric.json").write_text(json.dumps(RUBRIC))
    out, rubric = str(tmp_path / "s" / "r.zip"), str(tmp_path / "rubric.json")
    for cmd in (["benchmark.py", "--limit", "1", "--patterns", "single", "--json", str(tmp_path / "b.json")],
                ["-m", "grading.handin", str(tmp_path / "b.json"), "--student", "real", "--out", out],
                ["-m", "grading.grade", str(tmp_path / "s"), "--rerun", "1", "--rubric", rubric]):
        args = [sys.executable, *cmd, "--corpus", str(corpus), "--golden", str(golden_path)]
        p = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads((tmp_path / "s-graded" / "r" / "results.json").read_text())
    assert [line.split(":")[0] for line in items_of(r)["re-run"]["output"].splitlines()[1:]] == ["drawn", "reproduced"]
    assert not {f"week 9 benchmark.py: {k}" for k in ("valid", "fingerprints", "recomputed")} & set(lost(r))
