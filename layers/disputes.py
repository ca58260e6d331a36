"""Layer on the answer a user is shown (week 5's check, and the status of the calibrated answer check): is the answer
disputed? Passages that give different answers. Taught in week 8 beside the injection attacks.

    python -m layers.disputes "Who designed the Velloran Tower?" --corpus tests/fixtures/injection/corpus
    python -m experiments.disputes_eval --counterfactual .rag/cf/test-1to1   # rates over planted false answers

Expected output: the cited answer, then each passage's own answer to the question and, when the sources disagree,
the choice: each answer with its sources (file, page, section), the date a source gives itself, and which side is
newer. One model call per passage asked (~2-4 s each on the embedded engine, cached by content in
.rag/cache/judge.jsonl).

Why: a document that calmly states a false fact carries no instruction, so no detector can see it
(injection_detector.py, layers/quarantine.py). What can be seen is that it disagrees with another
passage. Each passage on the question's subject is asked the question on its own (layers.judge_answers.source_answer:
the judge's shared prompt, "not stated" when the passage does not answer); answers that agree (answers.answers_match,
either way round, unless each has a word of its own: 'Tomas Vell' and 'Edric Vell' are two people) form one
group; two or more groups make the answer DISPUTED, and the user is shown every group with its sources instead
of one answer picked silently. An answer not copied from its passage (not named in it)
is left out. A passage is on the subject (on_subject) when it names every name the question is about
(answers.about: a paragraph on another Jiménez answers for its own subject; that rule took false disputes on 30
clean golden answers from 13 to 2), or when it is another document under the title of a page the answer cites
(a mirror, an outdated copy); such a copy that gives no answer of its own shows the value it has where its twin
has the answer (changed_value, no call). When the prompt's passages give at most one answer, the check looks past
the prompt (further(): up to WIDE passages, the best of the fused, dense and BM25 rankings that the prompt does
not hold): the other side of a disagreement is often just below the prompt's cut. First among them, the same
section of each other copy of a cited page (mirrors.twin_sections): three copies of a course's schedule can fill the
prompt while the rankings reach only the fourth copy's other sections. A side counts only when it is a side of
one disagreement (disagreeing(), lab/sides.py, no model call): its sentence is about as close to the question as the
closest side's (same_question; on the dev half false disputes on 60 clean questions went from 13 to 5 and 34 of 38
planted ones stayed: results/issue48/side_gap.txt), and alike a sentence of another side (same_fact: a passage
misread gives another fact's value; results/issue59/same_fact_dev.txt). A side whose page reads like an
instruction (instruction_like: the injection detector's conflict bar) is kept: the quarantine (suspects) must see
it to refuse it.
A side whose answer is the subject of a page another side stands on answers an earlier hop of a multi-hop question
(the designer, whose page gives the village): it is no rival (lab/hops.py). When every page read gives one answer,
the model's own answer, asked without passages (lab/own.py), is a side if it gives another with probability at
least OWN_BAR: a folder whose every page states one false value has no other side (results/issue48/own_probe.txt:
a 1.5B model is that sure of 3 of 160 planted questions, and of 1 of 60 clean answers, a wrong one).
Not handled: a hop's answer that no page of the other side is titled by can still be read as a rival, and mark a
clean multi-hop answer disputed.
Lists ("A and B") count as one answer. A date is read from the text only (lab/dates.py), not from a file's
metadata.
Measured (issue 59, embedded 1.5B): with planted false pages beside the true ones (golden.json test, 1:1, n = 40),
each of the 11 false answers shown is disputed and none verified (results/issue59/disputes_cf_before_after.txt); of
78 injected questions' answers that show the attacker's target, 31 of 34 are disputed
(results/issue59/injection_before_after.txt). Its cost on clean questions (the ablation, results/issue59/ablation.txt):
+2.3 calls and +11 s a question on golden.json test, 7.3% of right answers shown as a choice; +4.5 calls, +33 s and
25% on debian/'s real manuals.
"""
import argparse
import sys
from itertools import zip_longest
from pathlib import Path

import judge
import llm
from layers import quarantine
from lab import choice, own
from lab.cache import ROOT
from lab.hops import not_hops
from lab.sides import same_fact, same_question
from lab.mirrors import cited_titles, match_either, mirrored, twin_sections, with_mirrors
from judge import MAX_SOURCE_CHARS
from layers.judge_answers import source_answer
from lab.answers import COMMON, NOT_STATED, about, named_in, normalize_answer, spaced
from vector_index import CorpusError


def on_subject(question, p, titles=()):
    """Whether a passage is about what the question asks: it names every name the question is about
    (answers.about), or it carries one of `titles` (mirrored(): a page the answer cites and its copies under the
    same title; a multi-hop answer's last page seldom names the question's first subject)."""
    return about(question, p["text"]) or p.get("title") in titles


def passage_answers(question, passages, titles=()):
    """[(passage id, its answer)] for the passages on the question's subject (on_subject; no call for the others)
    that answer it with words copied from themselves."""
    out = []
    for p in passages:
        if not on_subject(question, p, titles):
            continue
        reply = source_answer(question, p["text"][:MAX_SOURCE_CHARS])
        said = str(reply["value"]).strip()
        if normalize_answer(said) not in NOT_STATED and named_in(p["text"], said):
            out.append((p["id"], said))
    return out


def disagreeing(question, said, passages):
    """[(passage id, answer)] -> the groups (group_answers) that are sides of one disagreement (lab/sides.py): near
    the question (same_question), stating the same fact (same_fact), and not an earlier hop's answer (not_hops); a
    side whose page reads like an instruction (instruction_like) is kept for the quarantine."""
    from functools import lru_cache
    from vector_index import embed as embed_model
    once = lru_cache(maxsize=None)(lambda texts: embed_model(list(texts)))

    def embed(texts):   # both filters read the question's and the same sides' vectors: each list is embedded once
        return once(tuple(texts))
    keep = instruction_like(passages)
    groups = same_question(question, group_answers(said, question), passages, embed, keep=keep)
    return not_hops(same_fact(question, groups, passages, embed, keep=keep), passages)


def instruction_like(passages, detector=None):
    """The ids of the passages that read like an instruction: at or above the detector's conflict bar (`gray`),
    the passages suspects() can refuse. () without a detector. No model call."""
    detector = detector or _shipped()
    if detector is None:
        return set()
    return {p["id"] for p in passages if detector.score(p["text"])[0] >= detector.gray}


def agree(a, b, question=""):
    """Two answers to `question` match either way round (answers.answers_match), and neither holds a word of its own
    that the other lacks while the other holds one too: 'Tomas Vell' and 'Edric Vell' (token F1 0.5) are two
    people, 'New York' and 'New Jersey' two states; 'the engineer Tomas Vell' and 'Tomas Vell' one answer.
    Words the question says, common words and single letters do not count."""
    if not match_either(a, b, question):
        return False
    skip = set(spaced(question).split()) | COMMON
    own_a, own_b = ({w for w in spaced(x).split() if w not in skip and len(w) > 1} for x in (a, b))
    return not (own_a - own_b and own_b - own_a)


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


WIDE = 4   # passages past the prompt's read when the prompt's agree: at most this many calls more per answer


def further(question, passages, corpus, n=WIDE, chunker=None, titles=None):
    """Up to n passages past the prompt's on the question's subject, ids W1..Wn: first the same section of the other
    copies of a cited page (mirrors.twin_sections), then passages that name every name the question is about
    (answers.about), or another document under one of `titles` (the cited pages'), the best of the same query's
    fused ranking, of dense search alone and of BM25 alone, taken in turn; none that the prompt holds, by chunk or
    by text. No model call."""
    from retrieve import get_retriever, retrieve_chunks
    have, docs = {p.get("chunk_id") for p in passages}, {p.get("doc") for p in passages}
    texts = {" ".join(p["text"].split()) for p in passages}
    depth = len(passages) + n
    how = {"chunker": chunker} if chunker else {}
    twins = twin_sections(passages, get_retriever(corpus, **how), titles) if titles else []
    lists = [retrieve_chunks(question, depth, depth, corpus=corpus, method=m, **how)
             for m in ("fused", "dense", "bm25")]
    out = []
    for p in twins + [p for row in zip_longest(*lists) for p in row if p]:
        text = " ".join(p["text"].split())
        mirror = titles and p.get("title") in titles and p.get("doc") not in docs   # a copy of a cited page
        if p["chunk_id"] in have or text in texts or not (mirror or about(question, p["text"])):
            continue
        have.add(p["chunk_id"])
        texts.add(text)
        out.append({k: v for k, v in p.items() if k in ("chunk_id", "doc", "title", "text", "where")}
                   | {"id": f"W{len(out) + 1}"})
        if len(out) == n:
            break
    return out


def recorded_where(result):
    """{"corpus", "chunker"} the answer was retrieved from, for a CLI's check to read past the prompt: the last
    retrieval the result records (retrieve.recording; a folder inside the repository stored relative to it), else
    the one index this process has opened (a CLI answers from one), else {}."""
    import retrieve
    last = (result.get("retrievals") or [{}])[-1]
    if last.get("corpus"):
        path = Path(last["corpus"])
        return {"corpus": path if path.is_absolute() else ROOT / path, "chunker": last.get("chunker")}
    opened = {(folder, chunker) for folder, chunker, _ in list(retrieve._RETRIEVERS)}
    if len(opened) != 1:
        return {}
    folder, chunker = opened.pop()
    return {"corpus": Path(folder), "chunker": chunker}


OWN_BAR = 0.6   # the model's own answer is a side when it gives it with at least this probability (lab/own.py); chosen
# on dev (results/issue48/own_probe.txt): 1 clean answer of 60 disputed (a wrong one), 0 of 171 catalogue questions


def own_answer(question):
    """{"answer", "p", "calls", "seconds"}: the model's reply to the question without passages (lab/own.py), cached
    by question and prompt in .rag/cache/judge.jsonl; calls and seconds are what it cost when first computed."""
    def compute():
        # top_logprobs=1: llama.cpp returns token probabilities only when asked for at least one alternative
        response = llm.chat(own.messages(question), logprobs=True, top_logprobs=1, max_tokens=own.OWN_TOKENS)
        return own.read_reply(llm.token_logprobs(response))
    reply = judge.timed("own", [question, own.OWN_SYSTEM, own.OWN_EXAMPLES], compute, "layers.disputes")
    return {**reply["value"], "calls": reply["calls"], "seconds": reply["seconds"]}


def own_side(question, answer, bar=OWN_BAR):
    """[the model's own side] when the model, asked without passages (lab/own.py), gives another answer than the
    folder's with probability >= bar; else []. Every page of a folder can state one false value (an outdated
    policy copied everywhere, a planted page with no true one beside it): then only what the model knows disagrees."""
    mine = own_answer(question)
    if not mine["answer"] or mine["p"] < bar or agree(mine["answer"], answer, question):
        return []
    return [{"answer": mine["answer"], "sources": [own.OWN], "own": mine["p"]}]


def check(result, corpus=None, wide=None, chunker=None, own_bar=None):
    """{"disputed", "answers": [{"answer", "sources"}, ...] (every group, even one), "shown_in": the index of the
    group the shown answer belongs to or None, "more": the passages past the prompt's that answered (ids W1..),
    "read": how many of those were asked, "calls", "seconds": what the replies cost when first computed, so a
    rerun from the cache reports the same cost}. No call for an "I don't know".
    Passages are asked when on the question's subject (on_subject); a mirrored page with no answer of its own gives
    the value that replaces its twin's (mirror_answers); answers that are no side of one disagreement are dropped
    (disagreeing).
    When the prompt's passages give at most one answer and `corpus` is given, up to `wide` (default WIDE) passages
    further down the rankings of `corpus` (cut by `chunker`) are asked too (further()); when they all give one
    answer still, the model's own answer is a side if it is sure of another (own_side, `own_bar`, default OWN_BAR;
    1 turns it off)."""
    wide, own_bar = WIDE if wide is None else wide, OWN_BAR if own_bar is None else own_bar
    empty = {"disputed": False, "answers": [], "shown_in": None, "more": [], "read": 0, "calls": 0, "seconds": 0.0}
    if result.get("idk") or result.get("error") or not result.get("passages"):
        return empty
    question, prompt, more, read, cited = result["question"], result["passages"], [], 0, cited_titles(result)
    with judge.spending() as cost:
        shown = result.get("answer") or ""
        twins = mirrored(prompt, cited)
        said = with_mirrors(passage_answers(question, prompt, twins), prompt, twins, shown)
        groups = disagreeing(question, said, prompt)
        if len(groups) <= 1 and corpus is not None and wide > 0:
            more = further(question, prompt, corpus, wide, chunker, cited)
            seen, before = prompt + more, {p["id"] for p in prompt if on_subject(question, p, twins)}
            # asked now: the passages found, and the prompt's own pages whose copy was found past the prompt
            fresh = [p for p in seen if p["id"] not in before]
            twins = mirrored(seen, cited)
            read, found = len(more), passage_answers(question, fresh, twins)
            said = with_mirrors(said + found, seen, twins, shown)
            groups = disagreeing(question, said, seen)
            answered = {pid for g in groups for pid in g["sources"]}
            more = [p for p in more if p["id"] in answered]
        if len(groups) == 1 and corpus is not None and wide > 0 and own_bar < 1:
            groups += own_side(question, groups[0]["answer"], own_bar)
    home = next((i for i, g in enumerate(groups) if agree(shown, g["answer"], question)), None)
    return {**empty, "disputed": len(groups) >= 2, "answers": groups, "shown_in": home, "more": more,
            "read": read, "calls": cost["calls"], "seconds": round(cost["seconds"], 3)}


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
    text = {p["id"]: p["text"] for p in [*passages, *d.get("more", [])]}
    score = {pid: detector.score(text[pid])[0] for g in d["answers"] for pid in g["sources"] if pid in text}
    sides = [(g, min((score[s] for s in g["sources"] if s in score), default=0.0)) for g in d["answers"]]
    if all(low >= detector.gray for _, low in sides):
        return {}   # every side reads like an instruction: nothing to prefer
    return {s: f"contradicts the other passages and reads like an instruction (p={score[s]:.2f} >= {detector.gray:.2f})"
            for g, low in sides if low >= detector.gray for s in g["sources"] if s in score}


def worth_checking(result, detector=None):
    """Whether suspects() could quarantine anything in this result: a cited passage scores at or above the conflict
    bar and is not refused already (quarantine.quarantine_reasons). No model call; about one clean passage in 20
    scores that high, so verify() asks for check()'s calls only then."""
    detector = detector or _shipped()
    cited = {c for s in result.get("sentences", []) for c in s.get("cites", [])}
    return detector is not None and any(p["id"] in cited and not quarantine.quarantine_reasons(p["text"])
                                        and detector.score(p["text"])[0] >= detector.gray
                                        for p in result.get("passages", []))


def verify(result, on_verdict=None, step=quarantine.verify, dispute=None):
    """Layer on week 5's verify, through the quarantine layer (`step`): a passage on the side of a disagreement that
    reads like an instruction (suspects) is quarantined too. `dispute` is check(result) when the caller has it; None
    asks for it only when a cited passage could lose that way (worth_checking: no model call otherwise); False skips
    the rule."""
    if dispute is None and worth_checking(result):
        dispute = check(result)
    return step(result, on_verdict=on_verdict, extra=suspects(dispute, result["passages"]) if dispute else {})


def dispute(result):
    """None when the passages agree (or at most one answers); else check()'s dict."""
    d = check(result)
    return d if d["disputed"] else None


def documents(passages, corpus=None):
    """{doc: its whole text} for the passages' documents, read from the index of `corpus`; {} without one."""
    if corpus is None:
        return {}
    from retrieve import get_retriever
    r = get_retriever(corpus)
    return {doc: " ".join(r.texts[i] for i in r.by_doc.get(doc, [])) for doc in {p.get("doc") for p in passages} if doc}


def sides(d, passages, corpus=None):
    """choice.sides() of check()'s dict d, a source's date read from the rest of its document in `corpus` when its
    passage gives none."""
    return choice.sides(d, passages, documents([*passages, *d.get("more", [])], corpus))


def describe(d, passages=(), corpus=None):
    """choice.describe() of check()'s dict d: the CLI's lines for a disputed answer (dates as in sides())."""
    return choice.describe(d, passages, documents([*passages, *d.get("more", [])], corpus))


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
        d = check(r, corpus=args.corpus)
        print("\n" + (describe(d, r["passages"], args.corpus) if d["disputed"] else
                      f"not disputed: the passages that answer agree ({d['read']} more past the prompt asked)"))
    except (ValueError, CorpusError, llm.LLMError) as e:
        sys.exit(f"disputes: {e}")


if __name__ == "__main__":
    main()
