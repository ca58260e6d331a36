"""The evaluation harness the lab's scripts share: answer golden items with a pattern, check each answer as the lab
at full strength does (assembly.py: its citations, disputes and answer check; or with layers off), cache both, and
report.

- evaluate(name, answer_fn, items, settings): one row per question (citations.question_row), answers and rows
  cached, so an interrupted run resumes and a rerun is instant; run() does it for plain generate().
- evaluate_pattern(): a pattern's rows beside generate() rows on the same items; compare() and print_comparison()
  make the table every pattern prints.
- pattern_main(): a pattern script's --eval (its flags and one question: pattern_cli.py).
- mean(), fmt(): the output helpers (from pattern_cli.py; results files: cache.write_json).
"""
import functools
import sys
from pathlib import Path

import assembly
import injection_detector
import judge
import llm
from citations import question_row, summarize
from layers import answer_check, judge_answers, spans
from generate import DEFAULT_STYLE, generate
from lab.cache import Cache, keyed, module_of, write_json
from pattern_cli import fmt, mean  # noqa: F401 (the output helpers every pattern table uses)
from retrieve import CORPUS_DIR, DEFAULT_CHUNKER, eval_items, labels, recording
from vector_index import CorpusError, fingerprint

HERE = Path(__file__).parent


def index_of(settings):
    """What the index a pattern retrieves from holds (vector_index.fingerprint of its settings' corpus and chunker,
    known to the build that brought it up to date), or None for settings that name no corpus. A pattern with another
    index besides (CRAG's web stand-in) names it in its own settings."""
    if not settings.get("corpus"):
        return None
    return fingerprint(Path(settings["corpus"]), settings.get("chunker", DEFAULT_CHUNKER))


def answer_key(name, answer_fn, settings, item):
    """The key of answer_fn's answer to a golden item: the code of the module it runs (cache.keyed), the pattern's
    name and settings, what the index it retrieves from holds (index_of), the model, the question, and the code of
    the layers the answer passes through (the function's `layers`: patterns.Pattern, assembly.with_layer), whose
    code keys it beside its own module's ('multihop+layers.links'), so `python -m lab.cache --rekey` moves it."""
    module = "+".join([module_of(answer_fn), *getattr(answer_fn, "layers", ())])
    return keyed(module, "answer", name, settings or {}, index_of(settings or {}), llm.engine_info()["model"],
                 item["question"], item["id"])


def row_key(answer, item, off=frozenset()):
    """The key of a row judged from an answer (its answer_key) against a golden item's labels: the harness's code
    and what it imports (the judge, citations, the assembly and its layers), the labels, the judge model, the
    detector's weights, the answer check's calibration file and the layers left out (none: the key as before)."""
    return keyed("harness", "row", answer, labels(item), judge_answers.judge_model() or "-",
                 injection_detector.version(), answer_check.calibration_id(), *([sorted(off)] if off else []))


def stored_answer(name, answer_fn, item, settings=None):
    """The cached {"result", "cost"} of answer_fn's answer to item, as cached_answer() keeps it, or None (no model
    call): a layer on the answer (assembly.with_layer) is applied to its inner function's stored answer."""
    if getattr(answer_fn, "inner", None) is not None:
        kept = stored_answer(name, answer_fn.inner, item, settings)
        return kept and {**kept, "result": answer_fn.finish(kept["result"])}
    return Cache.shared("answers").get(answer_key(name, answer_fn, settings, item))


def cached_answer(name, answer_fn, item, settings=None, fresh=False):
    """{"result": answer_fn(question), "cost"}: cached under answer_key() in Cache("answers"), so every script
    that judges the same answers (evaluate, disputes.py) asks the model for them once. The result carries the
    retrievals the answer made (retrieve.recording), which its row keeps."""
    if getattr(answer_fn, "inner", None) is not None:   # a layer on the answer (assembly.with_layer): no model in it
        kept = cached_answer(name, answer_fn.inner, item, settings, fresh)
        return {**kept, "result": answer_fn.finish(kept["result"])}
    answers, key = Cache.shared("answers"), answer_key(name, answer_fn, settings, item)
    kept = None if fresh else answers.get(key)
    if kept is None:
        with llm.counting() as cost, recording() as retrievals:
            result = answer_fn(item["question"])
        kept = {"result": {**result, "retrievals": retrievals}, "cost": dict(cost)}   # grading/drift.py re-runs them
        try:
            answers.put(key, kept)
        except TypeError:  # a result that is not JSON (none of the lab's) is just not kept
            pass
    return kept


def where_of(settings):
    """disputes.check's corpus and chunker for a pattern's settings ({} when they name no corpus: the prompt's
    passages alone are read)."""
    settings = settings or {}
    return {"corpus": Path(settings["corpus"]), "chunker": settings.get("chunker")} if settings.get("corpus") else {}


def evaluate(name, answer_fn, items, settings=None, fresh=False, progress=True, lab=None):
    """Answer each golden item with answer_fn(question) -> a generate()-shaped result, check it as the page does
    (whether its sources disagree, disputes.check; its citations, verify; the answer, answer_check) and return one
    row per question: its status is what the user is shown. Answers are cached under answer_key() and rows under
    row_key(), so an interrupted run resumes, a rerun is instant, and a new judge re-judges the cached answers
    without asking for them again; fresh=True recomputes both. lab: assembly.build(off), default full strength."""
    from tqdm import tqdm
    lab = lab or assembly.FULL
    store, rows = Cache("rows"), []
    for item in tqdm(items, desc=name, unit="q", file=sys.stderr, disable=not progress):
        key = row_key(answer_key(name, answer_fn, settings, item), item, lab.off)
        if not fresh and key in store:
            rows.append(store.get(key))
            continue
        kept = cached_answer(name, answer_fn, item, settings, fresh)
        with judge.spending() as judged:   # cached verdicts count what they cost when first judged
            with judge.spending() as disputing:   # as the page checks: do the sources disagree? (disputes.check)
                dispute = lab.dispute(kept["result"], **where_of(settings))
            verdicts = lab.verify(kept["result"], dispute=dispute if dispute is not None else False)
        with judge.spending() as checking:
            checked = lab.status(kept["result"], verdicts, dispute)
        checked["dispute"] = dispute and {"disputed": dispute["disputed"], "answers": dispute["answers"]
                                          if dispute["disputed"] else None, "read": dispute["read"],
                                          "calls": disputing["calls"], "seconds": round(disputing["seconds"], 3)}
        # what the answer check added: its replies the sentence judge did not already ask for
        extra = [cs for k, cs in checking["replies"].items() if k not in judged["replies"]]
        checked["cost"] = {"calls": sum(c for c, _ in extra), "seconds": round(sum(s for _, s in extra), 3)}
        judge_cost = {k: judged[k] + checked["cost"][k] for k in ("calls", "seconds")}
        rows.append(store.put(key, question_row(kept["result"], item, verdicts, kept["cost"], judge_cost, checked)))
    return rows



def run(items, style=DEFAULT_STYLE, order="best_first", corpus=CORPUS_DIR, fresh=False):
    """The plain cited answer, generate(), over golden items -> rows."""
    name, answer_fn, settings = run_args(style, order, corpus)
    return evaluate(name, answer_fn, items, settings, fresh)


def run_args(style=DEFAULT_STYLE, order="best_first", corpus=CORPUS_DIR):
    """(name, answer_fn, settings) of the plain cited answer: what run() evaluates and caches answers under."""
    settings = {"style": style, "order": order, "corpus": str(corpus)}
    plain = functools.partial(generate, order=order, style=style, corpus=corpus)
    return f"generate-{style}", assembly.with_layer(plain, spans.finish, "layers.spans"), settings


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
            print(f"{method:22}" + "".join(f"{s[key]:>10{form}}" for key, _, form in PATTERN_COLUMNS))


def evaluate_pattern(name, answer_fn, items, settings, stats_of, corpus=CORPUS_DIR, fresh=False):
    """Rows of answer_fn next to plain generate() rows on the same items, plus per-question pattern figures
    (stats_of(result), read from the cached answers the rows were judged from; {} for an answer that failed).
    -> (compare() table, {method: rows}, [per-question figures with id, type, f1, generate_f1])"""
    rows = {"generate": run(items, corpus=corpus, fresh=fresh),
            name: evaluate(name, answer_fn, items, settings, fresh)}
    f1 = {m: {r["id"]: r["f1"] for r in rs} for m, rs in rows.items()}
    kept = [stored_answer(name, answer_fn, g, settings) for g in items]
    stats = [{"id": g["id"], "type": g["type"], "f1": f1[name][g["id"]], "generate_f1": f1["generate"][g["id"]],
              **(stats_of(k["result"]) if k else {})} for g, k in zip(items, kept)]
    table = compare(rows)
    print_comparison(table)
    return table, rows, stats


def pattern_main(name, args, answer, kw, stats_of, summarize_stats, generated=True):
    """A pattern script's --eval N: the pattern next to generate() on golden questions, checked as the lab at full
    strength checks (evaluate). kw: the pattern's settings (printed, and part of the cache key); summarize_stats(
    per-question figures, kw) -> (lines to print, figures for --json), the module's own summarize_stats, which
    grading/grade.py calls again on the file's per_question. The layers apply as the benchmark's (assembly.answerer)
    and the page's do (assembly.script_answerer); generated: the answer is written by generate(), so the span layer
    too. One question: pattern_cli.ask."""
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in kw.items()}
    answer = assembly.script_answerer(answer, generated)
    try:
        print(f"eval={args.eval} golden={args.golden} " + " ".join(f"{k}={v}" for k, v in settings.items()))
        print(f"model: {llm.engine_info()['engine']} {llm.engine_info()['model']}")
        items = eval_items(args.golden, args.eval, args.corpus, args.chunker)
        table, rows, stats = evaluate_pattern(name, answer, items, settings, stats_of, args.corpus, args.fresh)
    except (ValueError, CorpusError, llm.LLMError) as e:
        sys.exit(f"{name.replace('-', '_')}: {e}")
    lines, figures = summarize_stats(stats, kw)
    print("\n".join(lines))
    if args.json:
        write_json(args.json, {"settings": settings, "model": llm.engine_info(), "table": table,
                               name.replace("-", "_"): figures, "per_question": stats, "rows": rows})
