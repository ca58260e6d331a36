"""One-off, for issue 19: move cached entries made under the old cache keys (hand-bumped versions, prompt hashes,
absolute paths) to the one rule (cache.keyed), by replaying the commands that made the committed results with
no model at all. Each lookup the replay makes under a new key that is not cached is tried under the key the old
code gave the same inputs; a hit is copied under the new key. Anything neither key holds stops the replay (a
script exits with the error; the benchmark leaves the row out), so nothing is computed here, and a replay that
prints the committed figures shows that the moved entries are the right ones.

    python migrate_keys.py --run verify_citations.py --limit 30 --json /tmp/v30.json
    python migrate_keys.py --allow-model --run benchmark.py   # a long run resumed: moves what it can, computes the rest
    python migrate_keys.py --snapshot      # the entries the replays used -> results/cache/ (replacing it)

Old keys were made from constants of the code at commit 147b227 (results/cache/keys_147b227.json). Goes once
the committed caches are all migrated; later edits re-key with `python cache.py --rekey MODULE`.
"""
import argparse
import json
import runpy
import sys
from pathlib import Path

import cache
from cache import Cache

HERE = Path(__file__).parent
TOUCHED = "migrate_touched"   # the keys the replays used, per cache: .rag/cache/migrate_touched.jsonl
OLD = json.loads((HERE / "results" / "cache" / "keys_147b227.json").read_text())   # computed from the tree at 147b227


def old_settings(name, settings):
    settings = dict(settings or {})
    if name.startswith("graphrag-") and "graph" in settings:   # the graph named by its path, with build flags
        import graph_index
        from retrieve import GOLDEN
        path = graph_index.graph_path(Path(settings["corpus"]), settings["chunker"], settings["extractor"])
        return {"mode": settings["mode"], "extractor": settings["extractor"], "corpus": settings["corpus"],
                "chunker": settings["chunker"], "golden": str(GOLDEN), "docs": 0, "docs_from_golden": False,
                "graph": str(path), "version": OLD["extract"]}
    return {**settings, **OLD["settings"].get(name, {})}


def legacy(name, key):
    """The key the old code gave the inputs of a new key (parts remembered by keyed()) in cache `name`, or None."""
    parts = getattr(key, "parts", None)
    if parts is None:
        return None
    tag, rest = parts[0], parts[1:]
    if name == "answers" and tag == "answer":
        pattern, settings, model, question, qid = rest
        return Cache.key(pattern, old_settings(pattern, settings), model, question, qid)
    if name == "rows" and tag == "row":
        answer = legacy("answers", rest[0])
        return answer and Cache.key(answer, OLD["judge_version"], OLD["quarantine"], OLD["row_code"])
    if name == "pattern_stats" and tag == "stats":
        pattern, settings, model, question = rest
        return Cache.key(pattern, old_settings(pattern, settings), model, question)
    if name == "judge":
        model, payload = rest
        if tag == "answer" and payload[2] != Cache.key(__import__("judge").SHARED_SYSTEM)[:12]:
            payload = payload[:2]   # only the shared prompt's hash was in the old key
        return Cache.key(tag, OLD["prompt"], model, payload)
    if name == "graph_extract" and tag == "extract":
        return Cache.key(OLD["extract"], *rest)
    if name == "graph_summaries" and tag == "summary":
        return Cache.key(OLD["summary"], *rest)
    if name == "router_eval" and tag == "route":
        return Cache.key("route", *rest, OLD["route"])
    if name == "router_eval" and tag == "mode":
        mode, question, model, s = rest
        return Cache.key("mode", mode, question, model, s, OLD["multihop" if mode in ("parallel", "iterative")
                                                               else "single"],
                         *([OLD["iterative"]] if mode == "iterative" else []), *([OLD["chain"]] if mode == "chain"
                                                                                   else []))
    if name == "injection_screen" and tag == "screen":
        import injection_detector as d
        return Cache.key(d.SCREEN_RULES, d.SCREEN_EXAMPLES, *rest)
    if name == "injection_answers" and tag == "answer":
        method, model, k, qid, question, corpus_hash = rest
        return Cache.key(OLD["injection"], method, OLD["fingerprint"][method], model, k, qid, question, corpus_hash)
    if name == "injection" and tag == "row":
        answer = legacy("injection_answers", rest[0])
        return answer and Cache.key(answer, OLD["judge_version"], OLD["quarantine"], OLD["disputes"],
                                    OLD["verifiers"])
    return None


def install(log):
    """Wrap cache.keyed (before any module imports it) and Cache lookups: a miss tries the legacy key."""
    keyed = cache.keyed

    def keyed_with_parts(module, *parts):
        key = keyed(module, *parts)
        key.parts = parts
        return key
    cache.keyed = keyed_with_parts
    contains, get = Cache.__contains__, Cache.get

    stores, followed = {}, set()

    def migrate(self, key):
        if key not in self.data:
            old = legacy(self.path.stem, key)
            if old is not None and old in self.data:
                self.put(key, self.data[old])
        if key not in self.data:
            return
        log.setdefault(self.path.stem, set()).add(str(key))
        if self.path.stem == "rows" and hasattr(key, "parts") and key not in followed:
            followed.add(key)   # the row's answer and the verdicts behind it, kept for a later re-judge
            answers = stores.setdefault("answers", Cache("answers"))
            migrate(answers, key.parts[1])
            if key.parts[1] in answers.data:
                import citations
                citations.verify(answers.data[key.parts[1]]["result"])

    Cache.__contains__ = lambda self, key: (migrate(self, key), contains(self, key))[1]
    Cache.get = lambda self, key, default=None: (migrate(self, key), get(self, key, default))[1]
    put, put_many = Cache.put, Cache.put_many

    def put_logged(self, key, value):   # recomputed from moved entries (a re-scored row): kept too
        log.setdefault(self.path.stem, set()).add(str(key))
        return put(self, key, value)

    def put_many_logged(self, items):
        items = list(items)
        log.setdefault(self.path.stem, set()).update(str(k) for k, _ in items)
        return put_many(self, items)
    Cache.put, Cache.put_many = put_logged, put_many_logged


def refusing_model():
    import llm

    def refuse(messages, schema):
        raise llm.LLMError("not cached under the old or the new key (the migration computes nothing)")
    model = llm.ScriptedModel(refuse)
    model.name = llm.engine_info()["model"]   # the keys name the real model
    return model


def run(script, args, allow_model=False):
    log = {}
    install(log)
    import contextlib
    import llm
    model = None if allow_model else refusing_model()
    sys.argv = [script, *args]
    status = 0
    try:
        with llm.use_model(model) if model else contextlib.nullcontext():
            runpy.run_path(str(HERE / script), run_name="__main__")
    except SystemExit as e:
        status = e.code or 0
    touched = Cache(TOUCHED)
    touched.put_many([(Cache.key(name, k), [name, k]) for name, keys in log.items() for k in keys])
    print(f"migrate_keys: {script} used " + ", ".join(f"{n} {len(k)}" for n, k in sorted(log.items()) if n != TOUCHED)
          + (f"; model calls refused: {len(model.calls)}" if model else ""), file=sys.stderr)
    return status


def snapshot(folder=HERE / "results" / "cache"):
    """Write the entries the replays used (under their new keys) to `folder`, one file per cache it holds."""
    touched, committed = {}, {p.stem for p in Path(folder).glob("*.jsonl")}
    for name, key in Cache(TOUCHED).data.values():
        touched.setdefault(name, set()).add(key)
    for name, keys in sorted((n, k) for n, k in touched.items() if n in committed):
        store = Cache(name)
        lines = [store._line(store._key(k), store.data[k]) for k in store.data if k in keys]
        (Path(folder) / f"{name}.jsonl").write_text("".join(lines), encoding="utf-8")
        print(f"{folder}/{name}.jsonl: {len(lines)} entries")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", nargs=argparse.REMAINDER, metavar="SCRIPT ARGS", help="replay one command")
    ap.add_argument("--allow-model", action="store_true",
                    help="compute what neither key holds (a long run resumed under the new keys), instead of stopping")
    ap.add_argument("--snapshot", action="store_true", help="write the entries the replays used to results/cache")
    args = ap.parse_args()
    if args.run:
        sys.exit(run(args.run[0], args.run[1:], args.allow_model))
    if args.snapshot:
        snapshot()
        return
    ap.print_help()


if __name__ == "__main__":
    main()
