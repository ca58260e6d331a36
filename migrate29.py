"""One-off, for issue 29: move the committed cache entries to the keys that name every input (an answer's index
fingerprint, a row's golden labels, an injection answer's forced attack doc), by replaying the commands that made
the committed results with the model refused (replay.py); rows are re-scored from the moved answers and verdicts. A
lookup under a new key that is not cached is tried under the key the old code (the tree at OLD, `git worktree add
/tmp/old 9504c19`) gave the same inputs; a hit is copied under the new key. Nothing is computed: a replay that
prints the committed figures shows that the moved entries are the right ones.

    python migrate29.py --old /tmp/old --run results/benchmark.json benchmark.py
    python cache.py --rekey graph_index               # extractions of documents no replay reads: code moved only
    python migrate29.py --old /tmp/old --snapshot     # the current entries -> results/cache/

Goes once the committed caches are migrated (it stays in git history).
"""
import argparse
import sys
from pathlib import Path

import cache
from cache import Cache, code_key

HERE = Path(__file__).parent
TOUCHED = "migrate_touched"
INJECTION_CORPUS = HERE / "tests" / "fixtures" / "injection" / "corpus"   # every committed injection run's corpus
OLD = None   # the old tree's root


def old_corpus_hash():
    """The injection answers' old corpus input: every file of the corpus folder re-read (injection.py at OLD)."""
    return Cache.key(*[(p.name, p.read_bytes().decode("utf-8", "replace"))
                       for p in sorted(INJECTION_CORPUS.glob("*")) if p.is_file()])


def old_key(module, parts):
    return Cache.key(code_key(module, OLD), Cache.key(*cache.portable(list(parts))))


def legacy(name, key):
    """The key the old code gave the inputs of a new key (its parts, remembered by keyed()), or None."""
    parts = getattr(key, "parts", None)
    if parts is None:
        return None
    tag, rest, module = parts[0], parts[1:], key.module
    if name == "answers" and tag == "answer":
        pattern, settings, _index, model, question, qid = rest
        settings = {k: v for k, v in settings.items() if k != "web_index"}
        return old_key(module, [tag, pattern, settings, model, question, qid])
    if name in ("rows", "injection") and tag == "row":
        return None   # re-scored from the moved answer and verdicts (no model call), which touches them all
    if name == "injection_answers" and tag == "answer":
        method, model, k, qid, question, _held, _forced = rest
        return old_key(module, [tag, method, model, k, qid, question, old_corpus_hash()])
    if name == "router_eval" and tag == "mode":
        return old_key(module, list(parts[:5]))
    return old_key(module, parts)   # inputs unchanged: only the code moved (judge, links, graph, screen, route)


def install(log):
    """keyed() keeps its parts on the Key; a Cache lookup that misses tries the legacy key and copies a hit."""
    keyed = cache.keyed

    def keyed_with_parts(module, *parts):
        key = keyed(module, *parts)
        key.parts = parts
        return key
    cache.keyed = keyed_with_parts
    contains, get, put, put_many = Cache.__contains__, Cache.get, Cache.put, Cache.put_many

    def migrate(self, key):
        if key not in self.data:
            old = legacy(self.path.stem, key)
            if old is not None and old in self.data:
                put(self, key, self.data[old])
        if key in self.data:
            log.setdefault(self.path.stem, set()).add(str(key))

    def put_logged(self, key, value):   # recomputed from moved entries without a model call: kept too
        log.setdefault(self.path.stem, set()).add(str(key))
        return put(self, key, value)

    def put_many_logged(self, items):
        items = list(items)
        log.setdefault(self.path.stem, set()).update(str(k) for k, _ in items)
        return put_many(self, items)
    Cache.__contains__ = lambda self, key: (migrate(self, key), contains(self, key))[1]
    Cache.get = lambda self, key, default=None: (migrate(self, key), get(self, key, default))[1]
    Cache.put, Cache.put_many = put_logged, put_many_logged


def run(committed, script, args):
    log = {}
    install(log)
    import replay
    if committed:
        status, refused, n, diffs = replay.replay(committed, script, args)
        print(f"## {' '.join([script, *args])} vs {committed}: exit {status}; model calls refused: {refused}; "
              f"{n} fields compared, {len(diffs)} differ")
        for d in diffs[:40]:
            print(f"   {d}")
    else:   # a command that writes no --json (the graph build)
        import llm
        import runpy
        model = replay.refusing_model()
        sys.argv = [script, *args]
        try:
            with llm.use_model(model):
                runpy.run_path(str(HERE / script), run_name="__main__")
        except SystemExit as e:
            print(f"exit {e.code}")
        print(f"## {' '.join([script, *args])}: model calls refused: {len(model.calls)}")
    Cache(TOUCHED).put_many([(Cache.key(name, k), [name, k]) for name, keys in log.items() for k in keys])
    print("used " + ", ".join(f"{n} {len(k)}" for n, k in sorted(log.items()) if n != TOUCHED), file=sys.stderr)


def snapshot(folder=HERE / "results" / "cache"):
    """Write the entries current under today's code (the moved ones, and those `cache.py --rekey` moved) to
    `folder`, one file per cache it holds; say how many of them the replays used."""
    touched = {}
    for name, key in Cache(TOUCHED).data.values():
        touched.setdefault(name, set()).add(key)
    for name in sorted(p.stem for p in Path(folder).glob("*.jsonl")):
        store = Cache(name)
        current = [k for k, (m, rest) in store.meta.items() if k == Cache.key(code_key(m), rest)]
        (Path(folder) / f"{name}.jsonl").write_text("".join(store._line(store._key(k), store.data[k]) for k in current),
                                                    encoding="utf-8")
        print(f"{folder}/{name}.jsonl: {len(current)} entries, {len(set(current) & touched.get(name, set()))} used "
              f"by the replays")


def main():
    global OLD
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", type=Path, required=True, help="the tree of the code that made the old keys")
    ap.add_argument("--run", nargs=argparse.REMAINDER, metavar="COMMITTED SCRIPT ARGS",
                    help="replay one command (COMMITTED '-' for a command that writes no --json)")
    ap.add_argument("--snapshot", action="store_true", help="write the current entries to results/cache")
    args = ap.parse_args()
    OLD = args.old.resolve()
    if args.run:
        committed, script, *rest = args.run
        run(None if committed == "-" else Path(committed), script, rest)
    elif args.snapshot:
        snapshot()


if __name__ == "__main__":
    main()
