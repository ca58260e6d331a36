"""Issue 60, run once: move the cached answers whose key hashed their layers' code keys into its inputs (harness.
answer_key before eb67d59) to the composite key that replaced it ('multihop+layers.links'), which --rekey and
--moved-from move from now on. `python -m lab.cache --moved-from REF` first (it moves every other entry current at
REF); then this, with REF's tree, for each table: it runs the table's command in this process with every model call
refused (grading.replay.run), and each answer key it asks for that is missing is looked up as REF's code made it.

    python -m lab.cache --moved-from 8c668cb
    python results/issue60/migrate_layer_keys.py 8c668cb benchmark disputes_golden

Expected output: per table, the answers moved and the calls refused (answers no code at REF made: a --make run
computes them); then `python -m grading.replay --all --record --from .rag/cache` replays with none refused.
"""
import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
import llm  # noqa: E402
from grading import replay, tables  # noqa: E402
from lab.cache import Cache, checkout, code_key, module_of, portable  # noqa: E402


def old_answer_key(before, name, answer_fn, settings, item):
    """harness.answer_key as it was at the commit whose tree is `before`: the layers' code keys in the inputs."""
    settings = settings or {}
    layers = {m: code_key(m, before) for m in getattr(answer_fn, "layers", ())}
    parts = ["answer", name, settings, harness.index_of(settings), llm.engine_info()["model"], item["question"],
             item["id"], *([{"layers": layers}] if layers else [])]
    return Cache.key(code_key(module_of(answer_fn), before), Cache.key(*portable(parts)))


def main():
    ref, *names = sys.argv[1:]
    chosen = [t for t in tables.TABLES if t.name in names]
    if not chosen:
        sys.exit(f"migrate_layer_keys: name tables of grading/tables.py ({', '.join(t.name for t in tables.TABLES)})")
    new_key, moved = harness.answer_key, []

    def migrating(name, answer_fn, settings, item):
        key, answers = new_key(name, answer_fn, settings, item), Cache.shared("answers")
        if key not in answers.data and getattr(answer_fn, "layers", ()):
            # the old form with REF's code keys, or with today's: a process started on REF's code reads each module's
            # code key from the file on disk when it first needs it, so what it wrote after a merge has today's
            for tree in (before, None):
                old = old_answer_key(tree, name, answer_fn, settings, item)
                if old in answers.data:
                    answers.put(key, answers.data[old])
                    moved.append(key)
                    break
        return key

    with tempfile.TemporaryDirectory() as before:
        checkout(ref, before)
        harness.answer_key = migrating
        for t in chosen:
            moved.clear()
            for command in [t.setup, t.command] if t.setup else [t.command]:
                script, *args = shlex.split(command)
                with tempfile.TemporaryDirectory() as tmp:
                    status, refused = replay.run(script, args, Path(tmp) / "out.json" if command == t.command else None)
            print(f"{t.name}: moved {len(moved)} answers; refused {refused}; exit {status}", flush=True)


if __name__ == "__main__":
    main()
