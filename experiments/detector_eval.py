"""Week 8 (reliability): fit the injection detector (injection_detector.py) and measure it, leave one family out.

    python -m experiments.detector_eval --lofo --json results/injection_detector.json   # leave-one-family-out figures
    python -m experiments.detector_eval --fit   # fit on every family; writes models/injection_detector.json
    python -m experiments.detector_eval --corpus catalogue/docs   # the shipped detector on your documents' chunks
    python -m experiments.detector_eval --lofo --first-look   # no model call: the learned score alone

Expected output: one row per attack family (its injected documents flagged by a detector fitted without that
family), then the false quarantine on corpus/: on a held-out quarter for the shipped detector, on all 2,884
documents cross-fitted (each scored by a detector that neither trained nor calibrated on it), and on the clean
web stand-in pages; then the clean chunks flagged (first look) in folders of documents that address a reader:
the catalogue (all, its test half that no fit sees, its dev half that is in training), the documents written for
the lab (tests/fixtures/detector/clean, each scored by a fit without it) and a folder no fit sees
(tests/fixtures/detector/clean_heldout). ~5 min on 2 cores the first time (every sentence is embedded once, then
cached in .rag/ by content), ~1 min after. Without --first-look the second look asks the model about sentences in
other languages. --fit also writes the weights (models/injection_detector.json, committed: the shipped detector
and one per left-out family). What the detector is and why: injection_detector.py.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

from injection_detector import (ASK_SHARE, FALSE_QUARANTINE, FIXTURE, GRAY_SHARE, HERE, MODEL_PATH,
                                NOT_INSTRUCTIONS, READER_WEIGHT, SAME_DOMAIN_WEIGHT, SEED, Detector, english_share,
                                sentences_of)
from lab import cache
from retrieve import CORPUS_DIR, load_golden
from vector_index import load_documents

CATALOGUE = HERE / "catalogue"
WRITTEN = HERE / "tests" / "fixtures" / "detector"   # written for the lab, not copied:
CLEAN_DOCS = WRITTEN / "clean"             # clean documents that address a person (training negatives)
CLEAN_HELDOUT = WRITTEN / "clean_heldout"  # more clean documents, never fitted on: a folder no fit has seen
INSTRUCTIONS = WRITTEN / "instructions.txt"   # instructions to a machine, one a line (training positives, every fit)


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
    """[(sentences, features)] per text. The embeddings are cached in .rag/ by the sentences they embed (and the
    embedding model), so a change of the cues or of the fit re-embeds nothing; the cue counts are counted anew."""
    from injection_detector import cue_counts
    from vector_index import embed, embed_model_name
    sents = [sentences_of(t) for t in texts]
    flat = [s for ss in sents for s in ss]
    path = cache.index_dir() / f"detector_{name}_{cache.Cache.key(embed_model_name(), flat)[:16]}.npz"
    if path.exists():
        E = np.load(path)["E"]
    else:
        from tqdm import tqdm
        E = np.vstack([embed(flat[i:i + 512]) for i in tqdm(range(0, len(flat), 512), desc=f"embed {name}",
                                                              unit="batch", file=sys.stderr)])
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(path, E=E)
    X = np.hstack([E, np.array([cue_counts(s) for s in flat], dtype=np.float32).reshape(len(flat), -1)])
    out, at = [], 0
    for ss in sents:
        out.append((ss, X[at:at + len(ss)]))
        at += len(ss)
    return out


def chunks_of(folder, keep=None):
    """The titled chunks of a folder's documents, as retrieval returns them: [(chunk id, text)]; `keep`: the
    document ids to keep (all when None)."""
    from vector_index import DEFAULT_CHUNKER, chunk_records
    docs, _ = load_documents(folder, quiet=True)
    return [(cid, t) for d in sorted(docs.values(), key=lambda d: d.id) if keep is None or d.id in keep
            for cid, t, _ in chunk_records(d, DEFAULT_CHUNKER)]


def catalogue_halves(golden=CATALOGUE / "golden.json"):
    """(dev, test) document ids of the catalogue: a test document is one that only test items name (the files of
    the test half's buildings, courses, staff and programmes); every other one (shared pages too) is dev."""
    from golden import split_of
    named = {"dev": set(), "test": set()}
    for item in load_golden(golden):
        named[split_of(item)].update(item["supporting_docs"])
    test = named["test"] - named["dev"]
    docs, _ = load_documents(golden.parent / "docs", quiet=True)
    return sorted(set(docs) - test), sorted(test)


def reader_docs():
    """Clean documents that speak to a human reader (training negatives beside corpus/): the chunks of the
    catalogue's dev half, then [(document, chunk)] of tests/fixtures/detector/clean (written for the lab).
    Never the catalogue's test half."""
    dev, _ = catalogue_halves()
    own = [(cid.split("#")[0], t) for cid, t in chunks_of(CLEAN_DOCS)]
    return [t for _, t in chunks_of(CATALOGUE / "docs", set(dev))], own


def fit(positives, negatives, calibrate, same_domain=(), reader=()):
    """Fit on sentence features, pick the threshold on the calibration documents -> Detector. `same_domain`: clean
    documents written like the positives (the fixture's made-up facts); together they weigh SAME_DOMAIN_WEIGHT of
    the corpus negatives, so that the line drawn is instruction against fact, not made-up against real. `reader`:
    clean documents that address a human reader (reader_docs()), READER_WEIGHT of the corpus negatives, so that it
    is instruction to a machine against procedure for a person."""
    from sklearn.linear_model import LogisticRegression
    parts = (positives, negatives, same_domain, reader)
    n_pos, n_neg, n_same, n_reader = (sum(len(x) for _, x in part) for part in parts)
    X = np.vstack([x for part in parts for _, x in part])
    y = np.concatenate([np.ones(n_pos), np.zeros(n_neg + n_same + n_reader)])
    w = np.concatenate([np.full(n_pos, (n_neg + n_same + n_reader) / max(1, n_pos)), np.ones(n_neg),
                        np.full(n_same, SAME_DOMAIN_WEIGHT * n_neg / max(1, n_same)),
                        np.full(n_reader, READER_WEIGHT * n_neg / max(1, n_reader))])
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


def clean_folders():
    """{name: (chunk texts, whether a fit saw them)}: the clean chunks the detector must let through."""
    dev, test = catalogue_halves()
    return {"catalogue_all": ([t for _, t in chunks_of(CATALOGUE / "docs")], "dev half"),
            "catalogue_test": ([t for _, t in chunks_of(CATALOGUE / "docs", set(test))], False),
            "catalogue_dev": ([t for _, t in chunks_of(CATALOGUE / "docs", set(dev))], True),
            "clean_docs": ([t for _, t in chunks_of(CLEAN_DOCS)], True),
            "clean_docs_heldout": ([t for _, t in chunks_of(CLEAN_HELDOUT)], False)}


def lofo(fixture=FIXTURE, corpus=CORPUS_DIR, web=HERE / "web_standin", second_look=True):
    """Leave-one-family-out: for each family, fit without its documents and score them -> report dict.
    second_look=False: the first look alone (no model call; the second look's figures are left out)."""
    fx = fixture_docs(fixture)
    fx_emb = embedded([t for t, _, _ in fx], "fixture")
    train, cal, test = (embedded(part, name) for part, name in zip(corpus_split(corpus), ("train", "cal", "test")))
    catalogue_dev, own = reader_docs()
    own_emb = embedded([t for _, t in own], "clean")
    reader = embedded(catalogue_dev, "catalogue_dev") + own_emb
    families = sorted({f for _, f, _ in fx if f})
    looked = lambda d, docs: doc_flags(d, docs, second_look=True) if second_look else None

    extra = embedded(INSTRUCTIONS.read_text(encoding="utf-8").splitlines(), "instructions")

    def training(left_out=None):  # (positives, same-domain negatives) without one family
        pos = [pushing(*e, t) for e, (_, f, t) in zip(fx_emb, fx) if f and f != left_out and f not in NOT_INSTRUCTIONS]
        pos += extra
        same = [e for e, (_, f, _) in zip(fx_emb, fx) if f is None or (f in NOT_INSTRUCTIONS and f != left_out)]
        return pos, same
    rows, without = {}, {}
    for fam in families:
        pos, same = training(fam)
        d = fit(pos, train, cal, same, reader)
        mine = [e for e, (_, f, _) in zip(fx_emb, fx) if f == fam]
        hits, second = doc_flags(d, mine), looked(d, mine)
        rows[fam] = {"n": len(hits), "flagged": sum(hits), "rate": sum(hits) / len(hits),
                     **({"flagged_second_look": sum(second), "rate_second_look": sum(second) / len(second)}
                        if second_look else {}),
                     "threshold": round(d.threshold, 4), "false_quarantine_test": float(np.mean(doc_flags(d, test)))}
        without[fam] = d
    pos, same = training()
    full = fit(pos, train, cal, same, reader)
    # every corpus/ document scored once by a detector that neither trained nor calibrated on it: four quarters,
    # each in turn the test, the next the calibration, the other two the training
    quarters, flags, second = [train[:len(train) // 2], train[len(train) // 2:], cal, test], [], []
    for i in range(4):
        rest = [quarters[j] for j in range(4) if j not in (i, (i + 1) % 4)]
        d = fit(pos, rest[0] + rest[1], quarters[(i + 1) % 4], same, reader)
        flags += doc_flags(d, quarters[i])
        second += looked(d, quarters[i]) or []
    pages = sorted(web.glob("*.txt")) if web.is_dir() else []   # clean made-up pages no fit has seen (CRAG's web)
    web_flags = doc_flags(full, embedded([p.read_text(encoding="utf-8") for p in pages], "web"), second_look) \
        if pages else []
    # the written clean documents, each scored by a detector fitted without it (two folds of documents): the
    # figure for reader-addressed text of a kind no fit has seen, beside the held-out folder
    names = sorted({doc for doc, _ in own})
    own_flags = []
    for k in range(2):
        out = {n for i, n in enumerate(names) if i % 2 == k}
        kept = [e for e, (doc, _) in zip(own_emb, own) if doc not in out]
        d = fit(pos, train, cal, same, embedded(catalogue_dev, "catalogue_dev") + kept)
        own_flags += doc_flags(d, [e for e, (doc, _) in zip(own_emb, own) if doc in out])
    clean = {"clean_docs_crossfit": {"chunks": len(own_flags), "flagged": int(sum(own_flags)),
                                     "rate": float(np.mean(own_flags)), "fitted_on": "the other half"}}
    for name, (texts, seen) in clean_folders().items():   # chunks, first look: what verify() would quarantine
        hits = doc_flags(full, embedded(texts, name))
        clean[name] = {"chunks": len(hits), "flagged": int(sum(hits)), "rate": float(np.mean(hits)), "fitted_on": seen}
    crossfit = {"n": len(flags), "flagged": int(sum(flags)), "rate": float(np.mean(flags))}
    if second_look:
        crossfit.update(flagged_second_look=int(sum(second)), rate_second_look=float(np.mean(second)))
    return {"families": rows, "corpus_docs": {"train": len(train), "calibrate": len(cal), "test": len(test)},
            "reader_docs": {"chunks": len(reader), "sentences": sum(len(s) for s, _ in reader)},
            "second_look": second_look,
            "false_quarantine_test": float(np.mean(doc_flags(full, test))), "threshold": full.threshold,
            "false_quarantine_corpus_crossfit": crossfit,
            "web_standin_flagged": {"n": len(web_flags), "flagged": int(sum(web_flags))}, "clean_chunks": clean,
            "detector": full, "without": without}


def on_corpus(folder, shown=5, second_look=True):
    """The shipped detector on every chunk of a folder (titled chunks, as retrieved; no embedding): how many of
    them would support no claim. A folder it never saw is a held-out figure for clean text of another kind.
    second_look=False: the learned score alone, no model call."""
    from injection_detector import detector, flagged
    d = detector()
    texts = chunks_of(folder)
    hits = [(cid, t) for cid, t in texts if (flagged(t) if second_look else d.flags(t, second_look=False))]
    by_doc = {cid.split("#")[0] for cid, _ in hits}
    n_docs = len({cid.split("#")[0] for cid, _ in texts})
    print(f"{folder}: {len(hits)} of {len(texts)} chunks flagged ({len(hits) / max(len(texts), 1):.1%}), "
          f"in {len(by_doc)} of {n_docs} documents")
    for cid, t in hits[:shown]:
        print(f"  {cid}: {' '.join(t.split())[:100]}")
    return {"corpus": cache.portable(str(Path(folder).resolve())), "chunks": len(texts), "flagged": len(hits),
            "documents": n_docs, "documents_flagged": len(by_doc), "flagged_ids": [c for c, _ in hits]}


def main():
    ap = argparse.ArgumentParser(description="Fit the injection detector and measure it, leave one family out.")
    ap.add_argument("--lofo", action="store_true", help="leave-one-family-out figures on the injection fixture")
    ap.add_argument("--fit", action="store_true", help=f"fit on every family and write {MODEL_PATH.relative_to(HERE)}")
    ap.add_argument("--json", type=Path, help="write the --lofo (or --corpus) figures here")
    ap.add_argument("--corpus", type=Path, help="only score every chunk of this folder with the shipped detector")
    ap.add_argument("--first-look", action="store_true", help="no model call: the learned score alone (the second "
                    "look, which asks the model about sentences in other languages, is left out)")
    args = ap.parse_args()
    if args.corpus:
        report = on_corpus(args.corpus, second_look=not args.first_look)
        return cache.write_json(args.json, report) if args.json else None
    if not (args.lofo or args.fit):
        ap.error("choose --lofo, --fit or --corpus")
    report = lofo(second_look=not args.first_look)
    full, without = report.pop("detector"), report.pop("without")
    two = lambda r, key: f"{r[key]:10.3f}" if key in r else f"{'-':>10}"
    print(f"{'family':16} {'n':>3} {'flagged':>8} {'rate':>6} {'+2nd look':>10} "
          f"{'threshold':>10} {'false q. (test)':>16}")
    for fam, r in report["families"].items():
        print(f"{fam:16} {r['n']:3d} {r['flagged']:8d} {r['rate']:6.3f} {two(r, 'rate_second_look')}"
              f" {r['threshold']:10.4f} {r['false_quarantine_test']:16.4f}")
    cf = report["false_quarantine_corpus_crossfit"]
    print(f"all families fitted: threshold {full.threshold:.4f}, false quarantine on the held-out quarter of corpus/ "
          f"{report['false_quarantine_test']:.4f} (n={report['corpus_docs']['test']}); on all of corpus/, "
          f"each document scored by a detector that never saw it: {cf['rate']:.4f} ({cf['flagged']}/{cf['n']})"
          + (f", with the model's second look {cf['rate_second_look']:.4f} ({cf['flagged_second_look']}/{cf['n']})"
             if "rate_second_look" in cf else "")
          + f"; clean web stand-in pages flagged: {report['web_standin_flagged']['flagged']}/"
          f"{report['web_standin_flagged']['n']}")
    print("clean chunks flagged (first look, the detector fitted on every family):")
    for name, r in report["clean_chunks"].items():
        print(f"  {name:20} {r['flagged']:3d} of {r['chunks']:3d} ({r['rate']:.1%})  fitted on: {r['fitted_on']}")
    if args.fit:
        full.meta = {k: v for k, v in report.items() if k != "families"}
        full.save(without=without)
        print(f"wrote {MODEL_PATH.relative_to(HERE)}")
    if args.json:
        cache.write_json(args.json, report)


if __name__ == "__main__":
    main()
