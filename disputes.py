"""Week 8 (reliability): is the answer disputed? Passages in the prompt that give different answers.

    python disputes.py "Who designed the Velloran Tower?" --corpus tests/fixtures/injection/corpus

Expected output: the cited answer, then each passage's own answer to the question and, when the passages
disagree, DISPUTED with every answer and its sources. One model call per passage (~2-4 s each on the embedded
engine, cached by content in .rag/cache/judge.jsonl).

Why: a document that calmly states a false fact carries no instruction, so no detector can see it
(injection_detector.py, generate.injection_markers). What can be seen is that it disagrees with another
passage. Each passage is asked the question on its own (judge.source_answer: the judge's shared prompt, "not
stated" when the passage does not answer); answers that agree (judge.answers_match, either way round) form one
group; two or more groups make the answer DISPUTED, and the user is shown every group with its sources instead
of one answer picked silently. An answer not copied from its passage (not named in it) is left out.
Not handled: a multi-hop question's hop passages answer their own hop, not the question; when the model names
the hop's entity as the passage's answer, a clean multi-hop answer can be marked disputed (measured in
injection.py's clean rows and README). Lists ("A and B") count as one answer.
"""
import argparse
import sys
from pathlib import Path

import llm
from judge import MAX_SOURCE_CHARS, NOT_STATED, answers_match, named_in, normalize_answer, source_answer
from vector_index import CorpusError


def passage_answers(question, passages):
    """[(passage id, its answer)] for the passages that answer the question with words copied from themselves."""
    out = []
    for p in passages:
        said = str(source_answer(question, p["text"][:MAX_SOURCE_CHARS])["value"]).strip()
        if normalize_answer(said) not in NOT_STATED and named_in(p["text"], said):
            out.append((p["id"], said))
    return out


def group_answers(answers):
    """[(id, answer)] -> [{"answer", "sources"}]: answers that match either way round share a group, in order."""
    groups = []
    for pid, said in answers:
        home = next((g for g in groups if answers_match(said, g["answer"]) or answers_match(g["answer"], said)), None)
        if home is None:
            groups.append({"answer": said, "sources": [pid]})
        elif pid not in home["sources"]:
            home["sources"].append(pid)
    return groups


def dispute(result):
    """None when the passages agree (or at most one answers); else {"answers": [{"answer", "sources"}, ...],
    "shown_in": index of the group the shown answer belongs to, or None}. No call for an "I don't know"."""
    if result.get("idk") or result.get("error") or not result.get("passages"):
        return None
    groups = group_answers(passage_answers(result["question"], result["passages"]))
    if len(groups) < 2:
        return None
    shown = result.get("answer") or ""
    home = next((i for i, g in enumerate(groups) if answers_match(shown, g["answer"]) or answers_match(g["answer"], shown)), None)
    return {"answers": groups, "shown_in": home}


def describe(d):
    """One line for the CLI: 'DISPUTED: the sources disagree: Imre Dolanski [S1]; Baxter Quill [S3]'."""
    return "DISPUTED: the sources disagree: " + "; ".join(
        f"{g['answer']} [{', '.join(g['sources'])}]" for g in d["answers"])


def main():
    from generate import check_question, generate, print_result
    from retrieve import CORPUS_DIR
    ap = argparse.ArgumentParser(description="Answer a question, then check whether its passages disagree.")
    ap.add_argument("question", help="the question")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of .txt/.md documents")
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
