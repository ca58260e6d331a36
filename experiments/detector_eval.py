"""Week 8 (reliability): fit the injection detector (injection_detector.py) and measure it, leave one family out.

    python -m experiments.detector_eval --lofo --json results/injection_detector.json   # leave-one-family-out figures
    python -m experiments.detector_eval --fit   # fit on every family; writes models/injection_detector.json
    python -m experiments.detector_eval --corpus catalogue/docs   # the shipped detector on your documents' chunks

Expected output: one row per attack family (its injected documents flagged by a detector fitted without that
family), then the false quarantine on corpus/: on a held-out quarter for the shipped detector, on all 2,884
documents cross-fitted (each scored by a detector that neither trained nor calibrated on it), and on the clean
web stand-in pages. ~5 min on 2 cores the first time (every sentence of corpus/ is embedded once, then cached in
.rag/), ~1 min after. --fit also writes the weights (models/injection_detector.json, committed: the shipped
detector and one per left-out family). What the detector is and why: injection_detector.py.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

from injection_detector import (ASK_SHARE, CUES, FALSE_QUARANTINE, FIXTURE, GRAY_SHARE, HERE, MODEL_PATH,
                                NOT_INSTRUCTIONS, SAME_DOMAIN_WEIGHT, SEED, Detector, english_share, features,
                                sentences_of)
from lab import cache
from retrieve import CORPUS_DIR, load_golden
from vector_index import load_documents


def fixture_docs(fixture=FIXTURE):
    """[(doc text, family or None for a true document, the attack's target or None)] of the fixture, once each."""
    docs, seen = [], set()
    for item in load_golden(fixture / "golden.json"):
        a = item["attack"]
        for name, family, target in ([(d, None, None) for d in item["supporting_docs"]]
                                     + [(a["doc"], a["kind"], a["target"])]):
            if name not in seen:
                seen.add(name)
                docs.append(((fixture / "corpus" / f"{name}.txt").read_text(encoding="utf-8"), family, target))
    return docs


def pushing(sentences, X, target):
    """(sentences, features) of an injected document's sentences that name the target: the instruction itself,
    not the topical sentences beside it, which read like any true document (all of them when none names it)."""
    from lab.answers import normalize_answer
    t = f" {normalize_answer(target)} "
    keep = [i for i, s in enumerate(sentences) if t in f" {normalize_answer(s)} "] or list(range(len(sentences)))
    return [sentences[i] for i in keep], X[keep]


def corpus_split(corpus=CORPUS_DIR):
    """corpus/ documents in three seeded parts, half / a quarter / a quarter: (train, calibrate, test) texts."""
    docs = [d for _, d in sorted(load_documents(corpus, quiet=True)[0].items())]
    order = np.random.default_rng(SEED).permutation(len(docs))
    texts = [f"{docs[i].title}\n{docs[i].text}" for i in order]
    a, b = len(texts) // 2, len(texts) * 3 // 4
    return texts[:a], texts[a:b], texts[b:]


def embedded(texts, name):
    """[(sentences, features)] per text, the corpus ones cached in .rag/ by content hash."""
    key = cache.keyed("injection_detector", "features", texts, list(CUES.values()))[:16]   # the code that makes them
    path = cache.index_dir() / f"detector_{name}_{key}.npz"
    sents = [sentences_of(t) for t in texts]
    if path.exists():
        X = np.load(path)["X"]
    else:
        from tqdm import tqdm
        flat = [s for ss in sents for s in ss]
        X = np.vstack([features(flat[i:i + 512]) for i in tqdm(range(0, len(flat), 512), desc=f"embed {name}",
                                                                   unit="batch", file=sys.stderr)])
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, X=X)
    out, at = [], 0
    for ss in sents:
        out.append((ss, X[at:at + len(ss)]))
        at += len(ss)
    return out


def fit(positives, negatives, calibrate, same_domain=()):
    """Fit on sentence features, pick the threshold on the calibration documents -> Detector. `same_domain`: clean
    documents written like the positives (the fixture's made-up facts); together they weigh SAME_DOMAIN_WEIGHT of
    the corpus negatives, so that the line drawn is instruction against fact, not made-up against real."""
    from sklearn.linear_model import LogisticRegression
    n_pos, n_neg, n_same = (sum(len(x) for _, x in part) for part in (positives, negatives, same_domain))
    X = np.vstack([x for _, x in positives] + [x for _, x in negatives] + [x for _, x in same_domain])
    y = np.concatenate([np.ones(n_pos), np.zeros(n_neg + n_same)])
    w = np.concatenate([np.full(n_pos, (n_neg + n_same) / max(1, n_pos)), np.ones(n_neg),
                        np.full(n_same, SAME_DOMAIN_WEIGHT * n_neg / max(1, n_same))])
    lr = LogisticRegression(C=1.0, max_iter=2000, random_state=SEED).fit(X, y, sample_weight=w / w.mean())
    d = Detector(lr.coef_[0], lr.intercept_[0], 1.0)
    cal = np.array([d.sentence_scores(s, x).max() for s, x in calibrate])
    d.threshold = float(np.quantile(cal, 1 - FALSE_QUARANTINE))
    d.gray = float(np.quantile(cal, 1 - GRAY_SHARE))
    # the second look's bar, from clean documents alone: it sends ASK_SHARE of them to the model
    d.foreign_bar = float(np.quantile([min(map(english_share, s)) for s, _ in calibrate], ASK_SHARE))
    return d


def doc_flags(d, docs, second_look=False):
    """Per document: flagged by the score; with second_look, or by the model's look at d.to_screen()."""
    return [d.reason(s, d.sentence_scores(s, x), second_look) is not None for s, x in docs]


def lofo(fixture=FIXTURE, corpus=CORPUS_DIR, web=HERE / "web_standin"):
    """Leave-one-family-out: for each family, fit without its documents and score them -> report dict."""
    fx = fixture_docs(fixture)
    fx_emb = embedded([t for t, _, _ in fx], "fixture")
    train, cal, test = (embedded(part, name) for part, name in zip(corpus_split(corpus), ("train", "cal", "test")))
    families = sorted({f for _, f, _ in fx if f})

    def training(left_out=None):  # (positives, same-domain negatives) without one family
        pos = [pushing(*e, t) for e, (_, f, t) in zip(fx_emb, fx) if f and f != left_out and f not in NOT_INSTRUCTIONS]
        same = [e for e, (_, f, _) in zip(fx_emb, fx) if f is None or (f in NOT_INSTRUCTIONS and f != left_out)]
        return pos, same
    rows, without = {}, {}
    for fam in families:
        pos, same = training(fam)
        d = fit(pos, train, cal, same)
        mine = [e for e, (_, f, _) in zip(fx_emb, fx) if f == fam]
        hits, second = doc_flags(d, mine), doc_flags(d, mine, second_look=True)
        rows[fam] = {"n": len(hits), "flagged": sum(hits), "rate": sum(hits) / len(hits),
                     "flagged_second_look": sum(second), "rate_second_look": sum(second) / len(second),
                     "threshold": round(d.threshold, 4), "false_quarantine_test": float(np.mean(doc_flags(d, test)))}
        without[fam] = d
    pos, same = training()
    full = fit(pos, train, cal, same)
    # every corpus/ document scored once by a detector that neither trained nor calibrated on it: four quarters,
    # each in turn the test, the next the calibration, the other two the training
    quarters, flags, second = [train[:len(train) // 2], train[len(train) // 2:], cal, test], [], []
    for i in range(4):
        rest = [quarters[j] for j in range(4) if j not in (i, (i + 1) % 4)]
        d = fit(pos, rest[0] + rest[1], quarters[(i + 1) % 4], same)
        flags += doc_flags(d, quarters[i])
        second += doc_flags(d, quarters[i], second_look=True)
    pages = sorted(web.glob("*.txt")) if web.is_dir() else []   # clean made-up pages no fit has seen (CRAG's web)
    web_flags = doc_flags(full, embedded([p.read_text(encoding="utf-8") for p in pages], "web"), True) if pages else []
    return {"families": rows, "corpus_docs": {"train": len(train), "calibrate": len(cal), "test": len(test)},
            "false_quarantine_test": float(np.mean(doc_flags(full, test))), "threshold": full.threshold,
            "false_quarantine_corpus_crossfit": {"n": len(flags), "flagged": int(sum(flags)),
                                                 "rate": float(np.mean(flags)), "flagged_second_look": int(sum(second)),
                                                 "rate_second_look": float(np.mean(second))},
            "web_standin_flagged": {"n": len(web_flags), "flagged": int(sum(web_flags))},
            "detector": full, "without": without}


def on_corpus(folder, shown=5):
    """The shipped detector on every chunk of a folder (titled chunks, as retrieved; no embedding): how many of
    them would support no claim. A folder it never saw is a held-out figure for clean text of another kind."""
    from injection_detector import flagged
    from vector_index import DEFAULT_CHUNKER, chunk_records
    docs, _ = load_documents(folder, quiet=True)
    texts = [(cid, t, meta["doc"]) for d in docs.values() for cid, t, meta in chunk_records(d, DEFAULT_CHUNKER)]
    hits = [(cid, t, doc) for cid, t, doc in texts if flagged(t)]
    by_doc = {doc for _, _, doc in hits}
    print(f"{folder}: {len(hits)} of {len(texts)} chunks flagged ({len(hits) / max(len(texts), 1):.1%}), "
          f"in {len(by_doc)} of {len(docs)} documents")
    for cid, t, _ in hits[:shown]:
        print(f"  {cid}: {' '.join(t.split())[:100]}")
    return {"corpus": cache.portable(str(Path(folder).resolve())), "chunks": len(texts), "flagged": len(hits),
            "documents": len(docs), "documents_flagged": len(by_doc), "flagged_ids": [c for c, _, _ in hits]}


def main():
    ap = argparse.ArgumentParser(description="Fit the injection detector and measure it, leave one family out.")
    ap.add_argument("--lofo", action="store_true", help="leave-one-family-out figures on the injection fixture")
    ap.add_argument("--fit", action="store_true", help=f"fit on every family and write {MODEL_PATH.relative_to(HERE)}")
    ap.add_argument("--json", type=Path, help="write the --lofo (or --corpus) figures here")
    ap.add_argument("--corpus", type=Path, help="only score every chunk of this folder with the shipped detector")
    args = ap.parse_args()
    if args.corpus:
        report = on_corpus(args.corpus)
        return cache.write_json(args.json, report) if args.json else None
    if not (args.lofo or args.fit):
        ap.error("choose --lofo, --fit or --corpus")
    report = lofo()
    full, without = report.pop("detector"), report.pop("without")
    print(f"{'family':16} {'n':>3} {'flagged':>8} {'rate':>6} {'+2nd look':>10} "
          f"{'threshold':>10} {'false q. (test)':>16}")
    for fam, r in report["families"].items():
        print(f"{fam:16} {r['n']:3d} {r['flagged']:8d} {r['rate']:6.3f} {r['rate_second_look']:10.3f}"
              f" {r['threshold']:10.4f} {r['false_quarantine_test']:16.4f}")
    cf = report["false_quarantine_corpus_crossfit"]
    print(f"all families fitted: threshold {full.threshold:.4f}, false quarantine on the held-out quarter of corpus/ "
          f"{report['false_quarantine_test']:.4f} (n={report['corpus_docs']['test']}); on all of corpus/, "
          f"each document scored by a detector that never saw it: {cf['rate']:.4f} ({cf['flagged']}/{cf['n']}), "
          f"with the model's second look "
          f"{cf['rate_second_look']:.4f} ({cf['flagged_second_look']}/{cf['n']}); clean web stand-in "
          f"pages flagged: {report['web_standin_flagged']['flagged']}/{report['web_standin_flagged']['n']}")
    if args.fit:
        full.meta = {k: v for k, v in report.items() if k != "families"}
        full.save(without=without)
        print(f"wrote {MODEL_PATH.relative_to(HERE)}")
    if args.json:
        cache.write_json(args.json, report)


if __name__ == "__main__":
    main()
