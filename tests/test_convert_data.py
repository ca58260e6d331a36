"""experiments/convert_data.py on a tiny raw dataset of the published shapes (never ../shared): ids, keys, singles."""
import json
import subprocess
import sys
from pathlib import Path

from experiments import convert_data as cd
ROOT = Path(__file__).parent.parent


def raw_data(tmp_path):
    h, m = tmp_path / "raw" / "hotpotqa", tmp_path / "raw" / "musique"
    h.mkdir(parents=True), m.mkdir(parents=True)
    (h / "corpus.json").write_text(json.dumps({"Alpha Town": ["Alpha is a town.", " Its mayor is Bo."],
                                                "Bo": ["Bo was born in Cee."]}))
    (h / "questions.json").write_text(json.dumps([{"_id": "h1", "question": "Where was Alpha's mayor born?",
        "answer": "Cee", "type": "bridge", "supporting_facts": [["Alpha Town", 1], ["Bo", 0]], "context": []}]))
    paras = [{"idx": 0, "title": "Dee", "paragraph_text": "Dee wrote Eff.", "is_supporting": True},
             {"idx": 1, "title": "Eff", "paragraph_text": "Eff was printed in Gee.", "is_supporting": True},
             {"idx": 2, "title": "Dee", "paragraph_text": "Another Dee, a river.", "is_supporting": False}]
    (m / "corpus.json").write_text(json.dumps([{"title": p["title"], "text": p["paragraph_text"]} for p in paras]))
    (m / "questions.json").write_text(json.dumps([{"id": "2hop__1_2", "question": "Where was the book by Dee printed?",
        "answer": "Gee", "answer_aliases": ["G"], "answerable": True, "paragraphs": paras,
        "question_decomposition": [{"id": 1, "question": "What did Dee write?", "answer": "Eff",
                                    "paragraph_support_idx": 0},
                                   {"id": 2, "question": "Where was #1 printed?", "answer": "Gee",
                                    "paragraph_support_idx": 1}]}]))
    return tmp_path / "raw"


def test_converter_builds_corpus_and_golden(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "experiments.convert_data", "--data", str(raw_data(tmp_path)),
                        "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert ("corpus: 5 documents (2 hotpotqa, 3 musique)" in r.stdout
            and "golden: 3 questions (2 multi, 1 single)" in r.stdout)
    files = sorted(p.name for p in (out / "corpus").glob("*.txt"))
    assert len(files) == 5 and len([f for f in files if f.startswith("dee_")]) == 2  # same title, two documents
    alpha = (out / "corpus" / f"{cd.doc_id('Alpha Town', 'Alpha is a town. Its mayor is Bo.')}.txt").read_text()
    assert alpha == "Alpha Town\nAlpha is a town. Its mayor is Bo.\n"
    golden = json.loads((out / "golden.json").read_text())
    keys = {"id", "question", "answer", "aliases", "supporting_docs", "type", "hops", "source"}
    assert all(keys <= set(g) for g in golden)
    multi_m = next(g for g in golden if g["id"] == "musique-2hop__1_2")
    assert multi_m["hops"] == 2 and multi_m["aliases"] == ["G"] and len(multi_m["supporting_docs"]) == 2
    assert [d["answer"] for d in multi_m["decomposition"]] == ["Eff", "Gee"]
    single = [g for g in golden if g["type"] == "single"]
    assert [g["question"] for g in single] == ["What did Dee write?"]  # '#1' refers to an earlier hop: not single
    assert single[0]["supporting_docs"] == [cd.doc_id("Dee", "Dee wrote Eff.")]
