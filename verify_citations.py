"""Week 4: check every citation. Which IDs are invalid, which sentences are uncited, which citations
do not support their sentence; over a run, ALCE-style citation recall and precision.

    python verify_citations.py                          # 10 golden questions, half single, half multi
    python verify_citations.py --limit 30 --json results/citations.json
    python verify_citations.py --styles lab,text,json --limit 30   # the prompt styles side by side
    python verify_citations.py --ask "question"         # one answer, each citation with its verdict

Expected output: the settings, a progress bar, then one row per prompt style: questions, sentences,
cited-sentence rate, invalid IDs, citation recall, citation precision, answer F1, seconds per question
(generation) and judge seconds per sentence; ~30 s per question on the embedded engine the first
time, much less on a rerun (verdicts are cached by judge.py).

Definitions (ALCE, Gao et al. 2023): a sentence is supported when its cited passages, together, support
it (an uncited sentence is not); citation recall = share of supported sentences. A citation is precise
when its sentence is supported and the citation either supports the sentence alone or is needed (the
other citations without it do not support it); citation precision = share of precise citations.
ALCE's ChatGPT figures on ASQA, for comparison: recall 73.6, precision 72.5.
"""
import argparse
import inspect
import json
import statistics
import sys
from pathlib import Path

import disputes
import judge
import llm
from generate import DEFAULT_STYLE, ORDERS, STYLES, check_question, generate, quarantine_reasons, quarantine_version
from cache import Cache
from answers import exact_match, f1
from judge import joined, supports
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, GOLDEN, doc_recall, eval_items
from vector_index import CorpusError

HERE = Path(__file__).parent
ALCE_CHATGPT_ASQA = {"citation_recall": 0.736, "citation_precision": 0.725}
TIMING_FIELDS = ("seconds_per_question", "seconds_p50", "judge_seconds_per_sentence")  # wall clock: differ run to run


def verify(result, dispute=None):
    """A generate() result -> per-sentence verdicts: [{text, cites, supported, precise: {id: bool}, quarantined}].
    A passage on the side of a disagreement that reads like an instruction (disputes.suspects) is quarantined too:
    `dispute` is disputes.check(result) when the caller has it; None asks for it only when a cited passage could
    lose that way (disputes.worth_checking: no model call otherwise); False skips the rule.
    A passage that carries injection markers (generate.injection_markers: label look-alikes, source tags, chat
    role tokens, "ignore the instructions", fake turns, ready-made replies) or that the learned detector flags
    (injection_detector.py: text addressed to the model or its reader) supports nothing: its citations are
    imprecise and listed in `quarantined` with the reasons (generate.quarantine_reasons). On 78 injected
    questions in 13 families the attack success goes 0.333 -> 0.013 with the dispute (0.013 for families the
    detector was not fitted on), results/injection.json; no document of corpus/ carries a marker, and the
    detector flags 0.83% of them (cross-fitted, with its second look: results/injection_detector.json)."""
    by_id = {p["id"]: p for p in result["passages"]}
    if dispute is None and disputes.worth_checking(result):
        dispute = disputes.check(result)
    conflict = disputes.suspects(dispute, result["passages"]) if dispute else {}
    # the question and short answer let the judge compare a sentence's answer with the source's own
    slot = {} if result.get("idk") else {"question": result.get("question"), "answer": result.get("answer")}
    check = lambda text, source: supports(text, source, **slot)
    out = []
    for s in result["sentences"]:
        cites = [c for c in s["cites"] if c in by_id]
        quarantined = {c: m for c in cites
                       if (m := quarantine_reasons(by_id[c]["text"]) + ([conflict[c]] if c in conflict else []))}
        usable = [c for c in cites if c not in quarantined]
        supported = bool(usable) and check(s["text"], joined([by_id[c] for c in usable]))
        precise = {}
        for c in cites:
            if not supported or c in quarantined:
                precise[c] = False
            elif len(usable) == 1:
                precise[c] = True
            else:
                others = [by_id[o] for o in usable if o != c]
                precise[c] = check(s["text"], by_id[c]["text"]) or not check(s["text"], joined(others))
        out.append({"text": s["text"], "cites": cites, "supported": supported, "precise": precise,
                    "quarantined": quarantined})
    return out


def answer_status(result, verdicts):
    """What the verdicts allow the short answer to be shown as: "verified" (every sentence supported),
    "partly verified", "unverified" (no sentence supported: the answer is not shown as the answer), "idk",
    "failed" (an unusable reply) or "unchecked" (verdicts None)."""
    if result.get("error"):
        return "failed"
    if result.get("idk"):
        return "idk"
    if verdicts is None:
        return "unchecked"
    supported = sum(v["supported"] for v in verdicts)
    return "unverified" if not supported else "verified" if supported == len(verdicts) else "partly verified"


UNVERIFIED = "unverified: no sentence of this answer is supported by its sources"


def question_row(result, item, verdicts, cost, judge_cost):
    """The numbers one answered question contributes to a run (cacheable, no model objects)."""
    sentences, citations = verdicts, [ok for v in verdicts for ok in v["precise"].values()]
    return {"id": item["id"], "type": item["type"], "source": item["source"], "answer": result["answer"],
            "em": exact_match(result["answer"], item), "f1": f1(result["answer"], item),
            "doc_recall": doc_recall(result.get("retrieved") or result["passages"], item["supporting_docs"]),
            "sentences": len(sentences), "cited": sum(bool(v["cites"]) for v in sentences),
            "supported": sum(v["supported"] for v in sentences), "citations": len(citations),
            "precise": sum(citations), "invalid": len(result["invalid_ids"]), "idk": bool(result["idk"]),
            "error": bool(result.get("error")), "status": answer_status(result, verdicts), "calls": cost["calls"], "prompt_tokens": cost["prompt_tokens"],
            "completion_tokens": cost["completion_tokens"], "seconds": cost["seconds"],
            "judge_seconds": judge_cost["seconds"]}


def answer_key(name, settings, item):
    return Cache.key(name, settings or {}, llm.engine_info()["model"], item["question"], item["id"])


def cached_answer(name, answer_fn, item, settings=None, fresh=False):
    """{"result": answer_fn(question), "cost"}: cached per (name, settings, model, question) in Cache("answers"),
    so every script that judges the same answers (evaluate, disputes.py) asks the model for them once."""
    answers, key = Cache("answers"), answer_key(name, settings, item)
    kept = None if fresh else answers.get(key)
    if kept is None:
        with llm.counting() as cost:
            result = answer_fn(item["question"])
        kept = {"result": result, "cost": dict(cost)}
        try:
            answers.put(key, kept)
        except TypeError:  # a result that is not JSON (none of the lab's) is just not kept
            pass
    return kept


def evaluate(name, answer_fn, items, settings=None, fresh=False, progress=True):
    """Answer each golden item with answer_fn(question) -> a generate()-shaped result, verify its
    citations, and return one row per question. Answers are cached per (name, settings, model, question)
    and rows per answer and judge.version(), so an interrupted run resumes, a rerun is instant, and a new
    judge re-judges the cached answers without asking for them again; fresh=True recomputes both."""
    from tqdm import tqdm
    store, rows = Cache("rows"), []
    for item in tqdm(items, desc=name, unit="q", file=sys.stderr, disable=not progress):
        key = Cache.key(answer_key(name, settings, item), judge.version(), quarantine_version(), ROW_CODE)
        if not fresh and key in store:
            rows.append(store.get(key))
            continue
        kept = cached_answer(name, answer_fn, item, settings, fresh)
        with judge.spending() as judge_cost:   # cached verdicts count what they cost when first judged
            verdicts = verify(kept["result"])
        rows.append(store.put(key, question_row(kept["result"], item, verdicts, kept["cost"], judge_cost)))
    return rows


ROW_CODE = Cache.key(inspect.getsource(question_row), inspect.getsource(evaluate))[:8]   # a changed row is recomputed


def summarize(rows):
    """Per-question rows -> the run's figures. Sentence and citation rates are pooled over the run."""
    total = lambda key: sum(r[key] for r in rows)
    n, sentences = max(1, len(rows)), max(1, total("sentences"))
    return {"questions": len(rows), "sentences": total("sentences"),
            "cited_sentence_rate": total("cited") / sentences, "invalid_ids": total("invalid"),
            "citation_recall": total("supported") / sentences,
            "citation_precision": total("precise") / max(1, total("citations")),
            "answer_em": total("em") / n, "answer_f1": total("f1") / n, "doc_recall": total("doc_recall") / n,
            "idk_answers": total("idk"), "failed_answers": total("error"), "llm_calls": total("calls") / n,
            "prompt_tokens": total("prompt_tokens") / n, "completion_tokens": total("completion_tokens") / n,
            "seconds_per_question": total("seconds") / n,
            "seconds_p50": statistics.median([r["seconds"] for r in rows] or [0]),
            "judge_seconds_per_sentence": total("judge_seconds") / sentences}


def run(items, style=DEFAULT_STYLE, order="best_first", corpus=CORPUS_DIR, fresh=False):
    """The plain cited answer, generate(), over golden items -> rows."""
    name, answer_fn, settings = run_args(style, order, corpus)
    return evaluate(name, answer_fn, items, settings, fresh)


def run_args(style=DEFAULT_STYLE, order="best_first", corpus=CORPUS_DIR):
    """(name, answer_fn, settings) of the plain cited answer: what run() evaluates and caches answers under."""
    settings = {"style": style, "order": order, "corpus": str(corpus)}
    return f"generate-{style}", lambda q: generate(q, order=order, style=style, corpus=corpus), settings


def print_answer(result, verdicts):
    status = answer_status(result, verdicts)
    shown = (f"{UNVERIFIED.upper()[:10]}{UNVERIFIED[10:]} (the model said: {result['answer']})"
             if status == "unverified" else f"{result['answer']}   [{status}]")
    print(f"\nquestion: {result['question']}\nanswer:   {shown}")
    for n, v in enumerate(verdicts, 1):
        quarantined = v.get("quarantined", {})
        marks = " ".join(f"[{c}: " + (f"not allowed as support: {', '.join(quarantined[c])}" if c in quarantined
                                      else 'supports' if ok else 'does not support') + "]" for c, ok in v["precise"].items())
        print(f"  {n}. {v['text']}\n     {marks or '(uncited)'} -> sentence {'supported' if v['supported'] else 'NOT supported'}")
    for bad in result["invalid_ids"]:
        print(f"  invalid citation [{bad['id']}] in sentence {bad['sentence'] + 1}: dropped (no such source)")
    print("sources:")
    for p in result["passages"]:
        print(f"  [{p['id']}] {p['chunk_id']}: {' '.join(p['text'].split())[:90]}")


SHOW_DISPUTES = True  # disputes.py: 6 of 60 clean golden answers marked disputed, 4 of the 30 held out (results/disputes_golden.json)


def print_checked(result, show_disputes=None):
    """The answer with the judge's verdicts (print_answer): what a CLI shows for one question; with show_disputes
    (default SHOW_DISPUTES), then whether its passages disagree (disputes.py: one call per passage about the question)."""
    d = disputes.check(result) if (SHOW_DISPUTES if show_disputes is None else show_disputes) else None
    print_answer(result, verify(result, d))
    if d is not None:
        d = d if d["disputed"] else None
        print(disputes.describe(d) if d else "not disputed: the passages that answer the question agree")


COLUMNS = [("questions", "questions", "d"), ("sentences", "sentences", "d"), ("cited_sentence_rate", "cited", ".3f"),
           ("invalid_ids", "invalid", "d"), ("citation_recall", "c-recall", ".3f"),
           ("citation_precision", "c-prec", ".3f"), ("answer_f1", "F1", ".3f"),
           ("seconds_per_question", "s/q", ".1f"), ("seconds_p50", "s/q p50", ".1f"),
           ("judge_seconds_per_sentence", "judge s", ".1f")]


def print_table(summaries):
    """One row per style, fixed columns; ALCE's ChatGPT citation figures underneath for scale."""
    print(f"\n{'style':8}" + "".join(f"{h:>10}" for _, h, _ in COLUMNS))
    for style, s in summaries.items():
        print(f"{style:8}" + "".join(f"{s[key]:>10{fmt}}" for key, _, fmt in COLUMNS))
    alce = {k: f"{v:>10.3f}" for k, v in ALCE_CHATGPT_ASQA.items()}
    print(f"{'ALCE*':8}" + "".join(alce.get(key, f"{'':>10}") for key, _, _ in COLUMNS[:6])
          + "   *ChatGPT on ASQA (Gao et al. 2023)")


PATTERN_COLUMNS = [("answer_em", "EM", ".3f"), ("answer_f1", "F1", ".3f"), ("doc_recall", "doc-rec", ".3f"),
                   ("citation_recall", "c-recall", ".3f"), ("citation_precision", "c-prec", ".3f"),
                   ("llm_calls", "calls/q", ".1f"), ("seconds_per_question", "s/q", ".1f")]


def compare(named_rows, splits=("all", "single", "multi")):
    """{method: rows} -> {split: {method: summary}}, each split summarised from its own rows."""
    pick = {"all": lambda r: True, "single": lambda r: r["type"] == "single", "multi": lambda r: r["type"] == "multi"}
    out = {}
    for split in splits:
        part = {m: [r for r in rows if pick[split](r)] for m, rows in named_rows.items()}
        if any(part.values()):
            out[split] = {m: summarize(rows) for m, rows in part.items()}
    return out


def print_comparison(table):
    """The table every pattern prints: one row per method, per split, same columns."""
    for split, by_method in table.items():
        n = next(iter(by_method.values()))["questions"]
        print(f"\n{split} (n={n})\n{'method':22}" + "".join(f"{h:>10}" for _, h, _ in PATTERN_COLUMNS))
        for method, s in by_method.items():
            print(f"{method:22}" + "".join(f"{s[key]:>10{fmt}}" for key, _, fmt in PATTERN_COLUMNS))


def evaluate_pattern(name, answer_fn, items, settings, stats_of, corpus=CORPUS_DIR, fresh=False):
    """Rows of answer_fn next to plain generate() rows on the same items, plus per-question pattern figures
    (stats_of(result), kept in the 'pattern_stats' cache so a resumed run still has them).
    -> (compare() table, {method: rows}, [per-question figures with id, type, f1, generate_f1])"""
    store, model = Cache("pattern_stats"), llm.engine_info()["model"]
    key = lambda q: Cache.key(name, settings, model, q)

    def answer(q):
        result = answer_fn(q)
        store.put(key(q), stats_of(result))
        return result

    rows = {"generate": run(items, corpus=corpus, fresh=fresh),
            name: evaluate(name, answer, items, settings, fresh)}
    f1 = {m: {r["id"]: r["f1"] for r in rs} for m, rs in rows.items()}
    stats = [{"id": g["id"], "type": g["type"], "f1": f1[name][g["id"]], "generate_f1": f1["generate"][g["id"]],
              **(store.get(key(g["question"])) or {})} for g in items]
    table = compare(rows)
    print_comparison(table)
    return table, rows, stats


def portable(value):
    """The payload with machine-specific paths made portable, for results committed from any machine: a path
    inside the repository becomes relative to it, a GGUF file its file name. Other values are unchanged."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(v) for v in value]
    if isinstance(value, str) and value.startswith("/"):
        if value.endswith(".gguf"):
            return Path(value).name
        root = str(HERE.resolve())
        if value == root or value.startswith(root + "/"):
            return str(Path(value).relative_to(root))
    return value


def write_json(path, payload):
    """Write a results file (portable paths, see portable()) and say where."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(portable(payload), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def mean(values):
    """Mean, or None for no values (printed as n/a)."""
    values = list(values)
    return sum(values) / len(values) if values else None


def fmt(x):
    return "n/a" if x is None else f"{x:.3f}"


def add_pattern_args(ap):
    """The flags every pattern script shares (--corpus, --chunker, --golden, --eval, --json, --fresh)."""
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of .txt/.md documents")
    ap.add_argument("--chunker", default=DEFAULT_CHUNKER, help="which collection to retrieve from")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions for --eval")
    ap.add_argument("--eval", type=int, default=0, metavar="N", help="evaluate on N golden questions (half single, half multi)")
    ap.add_argument("--json", type=Path, help="write the --eval figures here")
    ap.add_argument("--fresh", action="store_true", help="ignore cached per-question rows")


def parse_settings(prog, parser, settings):
    """A pattern script's flags -> (args, answer keyword arguments, cache settings); a bad value exits with one
    line naming the script. parser and settings are the script's own parser() and settings(args)."""
    args = parser().parse_args()
    try:
        return (args, *settings(args))
    except ValueError as e:
        sys.exit(f"{prog}: {e}")


def pattern_main(name, args, answer, kw, stats_of, summarize_stats, print_trace, describe=lambda r: ""):
    """The main() of a pattern script: one question (trace, verified answer, cost) or --eval N next to
    generate(). kw: the pattern's settings (printed, and part of the cache key); summarize_stats(per-question
    figures) -> (lines to print, figures for --json); describe(result) -> a prefix for the cost line."""
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in kw.items()}
    try:
        question = None if args.eval else check_question(args.question)
        print(f"{'question=' + repr(question) if question else f'eval={args.eval} golden={args.golden}'} "
              + " ".join(f"{k}={v}" for k, v in settings.items()))
        print(f"model: {llm.engine_info()['engine']} {llm.engine_info()['model']}")
        if question:
            r = answer(question)
            print_trace(r["trace"])
            print_checked(r)
            c = r["cost"]
            print(f"\n{describe(r)}llm calls {c['calls']}  prompt tokens {c['prompt_tokens']}  completion tokens "
                  f"{c['completion_tokens']}  {c['wall_seconds']:.1f} s")
            return
        items = eval_items(args.golden, args.eval, args.corpus, args.chunker)
        table, rows, stats = evaluate_pattern(name, answer, items, settings, stats_of, args.corpus, args.fresh)
    except (ValueError, CorpusError, llm.LLMError) as e:
        sys.exit(f"{name.replace('-', '_')}: {e}")
    lines, figures = summarize_stats(stats)
    print("\n".join(lines))
    if args.json:
        write_json(args.json, {"settings": settings, "model": llm.engine_info(), "table": table,
                               name.replace("-", "_"): figures, "per_question": stats, "rows": rows})


def main():
    ap = argparse.ArgumentParser(description="Verify the citations of generated answers on golden questions.")
    ap.add_argument("--limit", type=int, default=10, help="golden questions (half single, half multi)")
    ap.add_argument("--styles", default=DEFAULT_STYLE, help=f"comma-separated prompt styles of {', '.join(STYLES)}")
    ap.add_argument("--order", choices=ORDERS, default="best_first", help="order of the passages in the prompt")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of .txt/.md documents")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--ask", help="verify the answer to this one question instead")
    ap.add_argument("--fresh", action="store_true", help="ignore cached per-question results")
    ap.add_argument("--json", type=Path, help="write the figures here")
    ap.add_argument("--no-timing", action="store_true",
                    help="leave the wall-clock fields out of --json: two runs then write identical files")
    args = ap.parse_args()
    styles = [s.strip() for s in args.styles.split(",") if s.strip()]
    if not styles or any(s not in STYLES for s in styles):
        sys.exit(f"verify_citations: --styles takes {', '.join(STYLES)}, got {args.styles!r}")
    print(f"model={llm.engine_info()['model']} engine={llm.engine_info()['engine']} styles={','.join(styles)} "
          f"order={args.order} corpus={args.corpus}" + ("" if args.ask else f" golden={args.golden} limit={args.limit}"))
    try:
        if args.ask:
            result = generate(args.ask, order=args.order, style=styles[0], corpus=args.corpus)
            return print_answer(result, verify(result))
        items = eval_items(args.golden, args.limit, args.corpus)
        summaries = {s: summarize(run(items, s, args.order, args.corpus, args.fresh)) for s in styles}
    except (CorpusError, llm.LLMError) as e:
        sys.exit(f"verify_citations: {e}")
    print_table(summaries)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        if args.no_timing:
            summaries = {k: {f: x for f, x in v.items() if f not in TIMING_FIELDS} for k, v in summaries.items()}
        data = summaries[styles[0]] if len(styles) == 1 else {"styles": summaries}
        args.json.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
