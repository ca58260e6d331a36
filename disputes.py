"""Week 8 (reliability): is the answer disputed? Passages in the prompt that give different answers.

    python disputes.py "Who designed the Velloran Tower?" --corpus tests/fixtures/injection/corpus
    python -m experiments.disputes_eval --injection misinformation   # the disputed rate over a set

Expected output: the cited answer, then each passage's own answer to the question and, when the passages
disagree, DISPUTED with every answer and its sources. One model call per passage (~2-4 s each on the embedded
engine, cached by content in .rag/cache/judge.jsonl).

Why: a document that calmly states a false fact carries no instruction, so no detector can see it
(injection_detector.py, generate.injection_markers). What can be seen is that it disagrees with another
passage. Each passage is asked the question on its own (judge.source_answer: the judge's shared prompt, "not
stated" when the passage does not answer); answers that agree (answers.answers_match, either way round) form one
group; two or more groups make the answer DISPUTED, and the user is shown every group with its sources instead
of one answer picked silently. An answer not copied from its passage (not named in it) is left out, and so is
every passage that does not name all the names the question is about (answers.about: no call for it): a
paragraph on another Jiménez answers for its own subject. That rule took false disputes on 30 clean golden
answers from 13 to 2 and kept 5 of 6 misinformation documents disputed.
Not handled: a multi-hop question's hop passages answer their own hop, not the question; when the model names
the hop's entity as the passage's answer, a clean multi-hop answer can be marked disputed (measured in
injection.py's clean rows and labs/week8-graphrag-injection.md). Lists ("A and B") count as one answer.
"""
import argparse
import sys
from pathlib import Path

import judge
import llm
from judge import MAX_SOURCE_CHARS, source_answer
from lab.answers import NOT_STATED, about, answers_match, named_in, normalize_answer
from vector_index import CorpusError


def passage_answers(question, passages):
    """[(passage id, its answer)] for the passages about the question's subject (no call for the others) that
    answer it with words copied from themselves."""
    out = []
    for p in passages:
        if not about(question, p["text"]):
            continue
        reply = source_answer(question, p["text"][:MAX_SOURCE_CHARS])
        said = str(reply["value"]).strip()
        if normalize_answer(said) not in NOT_STATED and named_in(p["text"], said):
            out.append((p["id"], said))
    return out


def agree(a, b, question=""):
    """Two answers to `question` match either way round (answers.answers_match)."""
    return answers_match(a, b, question) or answers_match(b, a, question)


def group_answers(answers, question=""):
    """[(id, answer)] -> [{"answer", "sources"}]: answers that agree (agree()) share a group, in order."""
    groups = []
    for pid, said in answers:
        home = next((g for g in groups if agree(said, g["answer"], question)), None)
        if home is None:
            groups.append({"answer": said, "sources": [pid]})
        elif pid not in home["sources"]:
            home["sources"].append(pid)
    return groups


def check(result):
    """{"disputed", "answers": [{"answer", "sources"}, ...] (every group, even one), "shown_in": the index of the
    group the shown answer belongs to or None, "calls", "seconds": what the replies cost when first computed, so a
    rerun from the cache reports the same cost}. No call for an "I don't know"."""
    if result.get("idk") or result.get("error") or not result.get("passages"):
        return {"disputed": False, "answers": [], "shown_in": None, "calls": 0, "seconds": 0.0}
    with judge.spending() as cost:
        groups = group_answers(passage_answers(result["question"], result["passages"]), result["question"])
    shown = result.get("answer") or ""
    home = next((i for i, g in enumerate(groups) if agree(shown, g["answer"], result["question"])), None)
    return {"disputed": len(groups) >= 2, "answers": groups, "shown_in": home, "calls": cost["calls"],
            "seconds": cost["seconds"]}


def _shipped():
    """The committed injection detector (None without its weights), imported when first needed."""
    import injection_detector
    return injection_detector.detector()


def suspects(d, passages, detector=None):
    """{passage id: reason} for the sides of a dispute that read like an instruction: when the passages disagree
    (check()'s dict d), a side whose every source scores at or above the detector's conflict bar (`gray`: 5% of
    clean documents do) loses to a side with a source below it. An injected passage exists to push another
    answer, so it is the one that both disagrees and reads like an instruction; a clean passage is refused only
    when both hold (none of the true documents on the 78 injected questions was). {} when not disputed, when
    every side is above the bar, or without a detector. verify(result, dispute=d) quarantines them."""
    detector = detector or _shipped()
    if not d or not d.get("disputed") or detector is None:
        return {}
    text = {p["id"]: p["text"] for p in passages}
    score = {pid: detector.score(text[pid])[0] for g in d["answers"] for pid in g["sources"] if pid in text}
    sides = [(g, min((score[s] for s in g["sources"] if s in score), default=0.0)) for g in d["answers"]]
    if all(low >= detector.gray for _, low in sides):
        return {}   # every side reads like an instruction: nothing to prefer
    return {s: f"contradicts the other passages and reads like an instruction (p={score[s]:.2f} >= {detector.gray:.2f})"
            for g, low in sides if low >= detector.gray for s in g["sources"] if s in score}


def worth_checking(result, detector=None):
    """Whether suspects() could quarantine anything in this result: a cited passage scores at or above the conflict
    bar and is not refused already (generate.quarantine_reasons). No model call; about one clean passage in 20
    scores that high, so verify() asks for check()'s calls only then."""
    from generate import quarantine_reasons
    detector = detector or _shipped()
    cited = {c for s in result.get("sentences", []) for c in s.get("cites", [])}
    return detector is not None and any(p["id"] in cited and not quarantine_reasons(p["text"])
                                        and detector.score(p["text"])[0] >= detector.gray
                                        for p in result.get("passages", []))


def dispute(result):
    """None when the passages agree (or at most one answers); else check()'s dict."""
    d = check(result)
    return d if d["disputed"] else None


def describe(d):
    """One line for the CLI: 'DISPUTED: the sources disagree: Imre Dolanski [S1]; Baxter Quill [S3]'."""
    return "DISPUTED: the sources disagree: " + "; ".join(
        f"{g['answer']} [{', '.join(g['sources'])}]" for g in d["answers"])


def main():
    from generate import check_question, generate, print_result
    from retrieve import CORPUS_DIR
    ap = argparse.ArgumentParser(description="Answer a question, then check whether its passages disagree "
                                 "(the disputed rates over a set: experiments/disputes_eval.py).")
    ap.add_argument("question", help="the question")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--k", type=int, default=4, help="passages in the prompt")
    args = ap.parse_args()
    try:
        r = generate(check_question(args.question), args.k, corpus=args.corpus)
        print_result(r)
        for pid, said in passage_answers(r["question"], r["passages"]):
            print(f"  {pid} answers: {said}")
        d = dispute(r)
        print("\n" + (describe(d) if d else "not disputed: the passages that answer agree"))
    except (ValueError, CorpusError, llm.LLMError) as e:
        sys.exit(f"disputes: {e}")


if __name__ == "__main__":
    main()
