"""Issue 59, at the merge of issue 61: copy the smart answers cached under the pre-merge layers.links code key (made by
a process that ran the pre-merge code, re-keyed since to today's module key by lab.cache --rekey) to today's answer
key. DRY=1 counts only.
    git worktree add /tmp/old831 831c692 && PYTHONPATH=. python results/issue59/rekey_layers.py /tmp/old831"""
import os
import sys
from pathlib import Path
import harness, benchmark
from lab.cache import Cache, code_key
from retrieve import eval_items
DRY = os.environ.get("DRY")
OLD = {m: code_key(m, Path(sys.argv[1])) for m in ("layers.links", "layers.quarantine")}
real = harness.code_key
answers = Cache.shared("answers")
FOLDERS = [("corpus", "golden.json", ("test", "dev")), ("debian/docs", "debian/golden.json", (None,)),
           ("catalogue/docs", "catalogue/golden.json", ("test", "dev"))]
for corpus, golden, splits in FOLDERS:
    specs, _ = benchmark.pattern_specs(["smart"], Path(corpus))
    cache_name, settings, fn = specs["smart"]
    while getattr(fn, "inner", None) is not None:
        fn = fn.inner
    for split in splits:
        moved = have = missing = 0
        for item in eval_items(golden, 0, Path(corpus), **({"split": split} if split else {})):
            new = harness.answer_key(cache_name, fn, settings, item)
            harness.code_key = lambda m, root=None: OLD.get(m) or real(m, root)
            old = harness.answer_key(cache_name, fn, settings, item)
            harness.code_key = real
            if new in answers.data:
                have += 1
            elif old in answers.data:
                moved += 1
                if not DRY:
                    answers.put(new, answers.data[old])
            else:
                missing += 1
        print(f"{golden} {split}: moved {moved}, already current {have}, in neither {missing}", flush=True)
