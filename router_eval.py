"""Step 6: does routing pay? Router confusion matrices, then single vs parallel vs iterative on multi questions.

    python router_eval.py                                  # routers on every golden question, modes on 40 multi ones
    python router_eval.py --limit 2 --router-limit 20      # a smoke run: 5 min measured with the CPU shared
    python router_eval.py --limit 100 --modes single,iterative --json results/router_eval.json
    python router_eval.py --modes "" --no-llm --split test --golden catalogue/golden.json   # the routers, test half

Expected output: the settings; the learned router's 5-fold cross-validated confusion matrix (surface features,
the one saved to .rag/router.json and used by multihop.smart_answer; and surface + question embeddings, for
comparison) with decision time; the LLM router on --router-limit questions (half single, half multi); one row
per router: accuracy per source, wasted decompositions (fired on single) and misses (multi sent to single) with
their cost; then one row per mode on the multi questions, overall and per source: F1, EM, supporting-doc recall
of the final prompt's chunks (all modes hold --final-k) and of every chunk retrieved, LLM calls, seconds.
Writes the confusion-matrix PNG (--png) and --json (the tables and the PNG: router_report.py). Time on 2 idle
cores: ~2 s per LLM-routed question; per multi question ~6 s single, ~12 s parallel, ~20 s iterative. Every
per-question result is cached (.rag/cache/router_eval.jsonl, keyed by mode, question, model, prompts and settings):
an interrupted run resumes and a rerun takes seconds; --fresh recomputes.
--split test scores the learned routers on the test half of --golden, fitted on the dev halves of the --train
files (default golden.json and catalogue/golden.json: the deployed router); --split dev cross-validates within
those dev halves pooled (folds stratified by type and source) and scores --golden's dev items out of fold.
--no-llm skips the LLM router (no model call).
Honesty: the learned router is scored only on out-of-fold predictions (stratified, seeded folds): no item is
scored by a model that saw it. The saved (deployed) router is fitted on the dev halves and scored here only with
--split test. Its features and L2 strength were picked after comparing a few on the pooled dev folds (--split dev:
optimism small but not zero), never on a test half. The LLM
router's last two worked examples were added after errors on the 20-question smoke sample: 15/20 there
before; 19/20 after, on 20 other golden questions. "learned (same q)" is the learned router on the LLM
router's questions, for a side-by-side at equal n.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import confusion_matrix
from sklearn.model_selection import StratifiedKFold

import decompose
import llm
import multihop
import router
from generate import generate
from lab.answers import exact_match, f1
from lab.cache import Cache, keyed, write_json
from golden import split_of
from retrieve import (CORPUS_DIR, DEFAULT_CHUNKER, GOLDEN, doc_recall, eval_items, labels, load_golden, recording,
                      sample_golden)
from router_report import plot_confusion, print_modes, print_routers
from vector_index import CorpusError, fingerprint

HERE = Path(__file__).parent
PNG = HERE / "results" / "router_confusion.png"
# single = generate(), parallel = multihop_answer(), iterative = iterative_answer() (the link-following chain is a
# layer: layers/links.py, measured by experiments/chain_eval.py and the benchmark's ablation)
MODES = multihop.MODES
DEFAULT_LIMIT = 40           # multi questions for the modes (alternating sources): ~30 min on the embedded engine
FOLDS, SEED = 5, 0


def cv_predict(items, features="surface", vecs=None, folds=FOLDS, seed=SEED, lam=router.LAMBDA, by_source=False):
    """Out-of-fold P(multi): each item scored by a model fitted on the other folds (stratified by type, and by
    source too when by_source: items pooled from two corpora keep each corpus's share in every fold; seeded)."""
    x, y = router.router_features([g["question"] for g in items], features, vecs), router.labels(items)
    out, folds = np.full(len(y), 0.5), min(folds, int(min(y.sum(), len(y) - y.sum())))  # a tiny set: fewer folds
    if folds < 2:
        return out   # one item of a class (or none): nothing to fit out of fold
    strata = [f"{g['type']}/{g['source']}" for g in items] if by_source else y
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, strata):
        out[test] = router.predict_proba(router.fit_logreg(x[train], y[train], lam), x[test])
    return out


def split_routes(golden, split, train, features="surface"):
    """{id: multi?} on the `split` half of `golden` (items), by a router trained on the dev halves of the
    `train` golden files. split 'test': the router fitted on all those dev items (the deployed one, with the
    default train files) decides each test item; split 'dev': out-of-fold decisions from a 5-fold CV pooled over
    those dev items and golden's own (stratified by type and source), so no item is scored by a fit that saw it."""
    pool = router.training_items(train, "dev")
    if split == "test":
        fitted = router.train_router(pool, features)
        x = router.router_features([g["question"] for g in golden], features)
        return dict(zip((g["id"] for g in golden), map(bool, router.predict_proba(fitted, x) > 0.5)))
    ids = {g["id"] for g in pool}
    pool += [g for g in golden if g["id"] not in ids]
    decided = dict(zip((g["id"] for g in pool), map(bool, cv_predict(pool, features, by_source=True) > 0.5)))
    return {g["id"]: decided[g["id"]] for g in golden}


def confusion(items, multi_pred):
    """-> {accuracy, matrix [[tn, fp], [fn, tp]], by_source accuracy} against each item's type."""
    t, p = router.labels(items) > 0.5, np.asarray(multi_pred, dtype=bool)
    by_source = {s: float(np.mean([(g["type"] == "multi") == q for g, q in zip(items, p) if g["source"] == s]))
                 for s in sorted({g["source"] for g in items})}
    return {"accuracy": float((t == p).mean()), "matrix": confusion_matrix(t, p, labels=[False, True]).tolist(),
            "n": len(items), "by_source": by_source}


def time_router(model, questions, repeat=3):
    """(median, p95) milliseconds of one learned_route() decision, the first (warm-up) call not counted."""
    router.learned_route(questions[0], model)
    ms = []
    for q in list(questions) * repeat:
        t = time.perf_counter()
        router.learned_route(q, model)
        ms.append((time.perf_counter() - t) * 1000)
    return float(np.median(ms)), float(np.percentile(ms, 95))


def cached(cache, key, fresh, compute):
    hit = None if fresh else cache.get(key)
    return hit if hit is not None else cache.put(key, compute())


def llm_route(question):
    t = time.perf_counter()
    try:
        return {"multi": router.needs_decomposition(question), "seconds": time.perf_counter() - t}
    except llm.LLMError as e:  # an unreadable verdict counts as "single" (no decomposition fired) and is shown
        return {"multi": False, "seconds": time.perf_counter() - t, "error": str(e)}


def run_mode(mode, item, s):
    """One multi question through one mode -> its row (scores and cost)."""
    q, kw, t = item["question"], {"corpus": s["corpus"], "chunker": s["chunker"]}, time.perf_counter()
    with llm.counting() as cost, recording() as retrievals:
        if mode == "single":
            r = generate(q, k=s["final_k"], **kw)
        elif mode == "parallel":
            r = multihop.multihop_answer(q, s["k"], s["final_k"], s["max_hops"], **kw)
        else:
            r = multihop.iterative_answer(q, s["max_hops"], s["k"], s["final_k"], **kw)
    return {"f1": f1(r["answer"], item), "em": exact_match(r["answer"], item), "answer": r["answer"],
            "recall": doc_recall(r["passages"], item["supporting_docs"]),
            "recall_all": doc_recall(r.get("retrieved", r["passages"]), item["supporting_docs"]),
            "llm_calls": cost["calls"], "seconds": time.perf_counter() - t, "fallback": r.get("fallback"),
            # what a grader re-checks with no model (grading/drift.py): the reply, the passages, the retrievals
            "written": r.get("written", r["answer"]), "chunk_ids": [p["chunk_id"] for p in r["passages"]],
            "retrieved_ids": [p["chunk_id"] for p in r.get("retrieved", r["passages"])], "retrievals": retrievals,
            # the retrievals and hops, so merge policies can be compared offline from the cached rows
            "steps": [{k: v for k, v in st.items()
                       if k in ("step", "hop", "n", "query", "chunks", "answer", "source", "retry")}
                      for st in r.get("trace", []) if st["step"] in ("retrieve", "hop", "merge")]}


def summarize(rows):
    ok = [r for r in rows if "error" not in r]
    mean = lambda key: float(np.mean([r[key] for r in ok])) if ok else float("nan")
    return {**{k: mean(k) for k in ("f1", "em", "recall", "recall_all", "llm_calls", "seconds")},
            "n": len(ok), "errors": len(rows) - len(ok), "fallbacks": sum(bool(r.get("fallback")) for r in ok)}


def main():
    ap = argparse.ArgumentParser(description="Router confusion matrices; single vs parallel vs iterative on multi "
                                 "questions.")
    ap.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="multi questions for the modes (0 = all 200)")
    ap.add_argument("--router-limit", type=int, default=0, help="questions for the LLM router (0 = all)")
    ap.add_argument("--modes", default=",".join(MODES), help=f"comma list of {', '.join(MODES)}; empty: routers only")
    ap.add_argument("--k", type=int, default=multihop.HOP_K, help="chunks retrieved per sub-question / hop")
    ap.add_argument("--final-k", type=int, default=multihop.FINAL_K, help="chunks in every mode's final prompt")
    ap.add_argument("--max-hops", type=int, default=decompose.MAX_PARTS, help="sub-questions / hops at most")
    ap.add_argument("--corpus", type=Path, default=CORPUS_DIR, help="folder of documents (.txt .md .pdf .docx .html)")
    ap.add_argument("--chunker", default=DEFAULT_CHUNKER, help="which collection to retrieve from")
    ap.add_argument("--golden", type=Path, default=GOLDEN, help="golden questions")
    ap.add_argument("--json", type=Path, help="write the report here")
    ap.add_argument("--png", type=Path, default=PNG, help="confusion-matrix figure")
    ap.add_argument("--no-embed", action="store_true",
                    help="skip the surface + embeddings router (saves embedding time)")
    ap.add_argument("--fresh", action="store_true", help="recompute instead of reading cached per-question results")
    ap.add_argument("--split", choices=("dev", "test"),
                    help="score the learned routers on this half of --golden only, trained on the dev halves of "
                    "--train: test = fitted on them all; dev = 5-fold CV pooled over them (default: CV on all)")
    ap.add_argument("--train", default=",".join(str(p.relative_to(HERE)) for p in router.TRAIN_GOLDEN),
                    help="comma list of golden files whose dev halves train the router with --split")
    ap.add_argument("--no-llm", action="store_true", help="skip the LLM router (no model call at all)")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if (set(modes) - set(MODES) or min(args.k, args.final_k, args.max_hops) < 1 or args.limit < 0
            or args.router_limit < 0):
        sys.exit(f"router_eval: --modes takes {', '.join(MODES)}; --k, --final-k, --max-hops >= 1; limits >= 0")
    from tqdm import tqdm
    try:
        model = llm.engine_info()["model"]
        train = [Path(t) if Path(t).is_absolute() else HERE / t for t in args.train.split(",") if t]
        if modes:   # the index brought up to date: the modes retrieve; the routers alone need no index
            golden = eval_items(args.golden, 0, args.corpus, args.chunker, split=args.split)
        else:
            golden = [g for g in load_golden(args.golden) if args.split in (None, split_of(g))]
        if not golden:
            raise CorpusError(f"golden file {args.golden} has no {args.split or ''} questions")
        held = fingerprint(args.corpus, args.chunker) if modes else None   # a mode row is keyed by what it holds
        s = {"k": args.k, "final_k": args.final_k, "max_hops": args.max_hops,
             "corpus": str(Path(args.corpus).resolve()), "chunker": args.chunker}
        print(f"golden={args.golden} ({len(golden)} questions) corpus={args.corpus} chunker={args.chunker} "
              f"model={model}\n"
              f"modes={modes} limit={args.limit} router_limit={args.router_limit} k={args.k} final_k={args.final_k} "
              f"max_hops={args.max_hops} folds={FOLDS} seed={SEED} fresh={args.fresh} split={args.split}"
              + (f" train={args.train} (dev halves)" if args.split else ""))
        cache, routers, routes = Cache("router_eval"), {}, {}   # routes: each router's decision per question
        for features in ("surface",) + (() if args.no_embed else ("surface+embed",)):
            name = "learned" if features == "surface" else "learned+embed"
            if args.split:
                routes[name] = split_routes(golden, args.split, train, features)
            else:
                routes[name] = dict(zip((g["id"] for g in golden), map(bool, cv_predict(golden, features) > 0.5)))
            routers[name] = confusion(golden, list(routes[name].values()))
            fitted = router.train_router(router.training_items(train) if args.split else golden, features)  # timing
            med, p95 = time_router(fitted, [g["question"] for g in golden[:50]], repeat=2)
            routers[name].update(seconds_per_question=med / 1000, ms_median=med, ms_p95=p95)
            how = {"test": "fitted on the dev halves", "dev": "pooled dev CV"}.get(args.split, "CV")
            print(f"{name}: {how} accuracy {routers[name]['accuracy']:.3f} (n={len(golden)}), decision {med:.3f} ms "
                  f"median, {p95:.3f} ms p95")
        if Path(args.golden).resolve() in {p.resolve() for p in router.TRAIN_GOLDEN}:
            deployed = router.load_router()   # fitted on the dev halves of the training files when stale
            print(f"deployed router ({router.router_path()}): fitted on {deployed['trained_on']} items, the "
                  f"{deployed['split']} halves of {', '.join(deployed['golden'])}")
        routed = [] if args.no_llm else sample_golden(golden, args.router_limit)
        verdicts = [cached(cache, keyed("router", "route", q["question"], model), args.fresh,
                           lambda: llm_route(q["question"]))
                    for q in tqdm(routed, desc="llm router", unit="q", file=sys.stderr)]
        if routed:
            routes["llm"] = {g["id"]: bool(v["multi"]) for g, v in zip(routed, verdicts)}
            routers["llm"] = confusion(routed, list(routes["llm"].values()))
            routers["llm"]["seconds_per_question"] = float(np.mean([v["seconds"] for v in verdicts]))
            routers["llm"]["errors"] = sum("error" in v for v in verdicts)
            if routers["llm"]["errors"]:
                print(f"llm router: {routers['llm']['errors']} unreadable verdict(s), counted as single")
        if routed and len(routed) < len(golden):  # the learned router on the LLM router's very items, out-of-fold
            routes["learned (same q)"] = {g["id"]: routes["learned"][g["id"]] for g in routed}
            routers["learned (same q)"] = confusion(routed, list(routes["learned (same q)"].values()))
        items = sample_golden([g for g in golden if g["type"] == "multi"], args.limit)
        rows = {m: [] for m in modes}
        for item in tqdm(items if modes else [], desc="modes", unit="q", file=sys.stderr):
            for m in modes:
                key = keyed("router_eval", "mode", m, item["question"], model, s, held, labels(item))
                try:
                    rows[m].append({**cached(cache, key, args.fresh, lambda: run_mode(m, item, s)),
                                    "source": item["source"], "id": item["id"]})
                except llm.LLMError as e:  # not cached: a rerun tries again
                    rows[m].append({"error": str(e), "source": item["source"], "id": item["id"]})
        table = {m: {"all": summarize(r), **{src: summarize([x for x in r if x["source"] == src])
                                             for src in sorted({x["source"] for x in r})}} for m, r in rows.items()}
    except (CorpusError, llm.LLMError) as e:
        sys.exit(f"router_eval: {e}")
    print_routers(routers, table)
    if modes:
        print_modes(table)
    plot_confusion(routers, args.png)
    print(f"\nwrote {args.png}")
    if args.json:
        report = {"router": routers, "modes": {m: {**t["all"], "by_source": {k: v for k, v in t.items() if k != "all"}}
                                               for m, t in table.items()}, "settings": {**s, "model": model},
                  # what the figures are made of (grading/grade.py recomputes them): decisions and rows, per question
                  "routes": routes, "rows": {m: [{k: v for k, v in r.items() if k != "steps"} for r in rs]
                                             for m, rs in rows.items()}}
        report["settings"].update(split=args.split, train=args.train if args.split else None)
        write_json(args.json, report)


if __name__ == "__main__":
    main()
