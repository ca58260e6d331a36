"""Issue 59, at a merge that changes the answer path's code: copy each answer cached under the pre-merge code keys of
the layers it passes through (made by a process that ran the pre-merge code, re-keyed since to today's module key by
lab.cache --rekey) to today's answer key. Every pattern of the after-run (single, smart), at full strength and with
each layer left out (the ablation's answers). DRY=1 counts only.
    git worktree add /tmp/pre <the commit before the merge> && PYTHONPATH=. python results/issue59/rekey_layers.py /tmp/pre
Used at the merges of issue 61 (against 831c692) and of the tidy branch (against b36eca7)."""
import functools
import os
import sys
from pathlib import Path
import assembly
import harness
import benchmark
from lab.cache import Cache, code_key
from retrieve import eval_items
DRY = os.environ.get("DRY")
old_key = functools.cache(lambda m: code_key(m, Path(sys.argv[1])))
real = harness.code_key
answers = Cache.shared("answers")
FOLDERS = [("corpus", "golden.json", ("test", "dev")), ("debian/docs", "debian/golden.json", (None,)),
           ("catalogue/docs", "catalogue/golden.json", ("test", "dev"))]
CONFIGS = [()] + [(layer,) for layer in assembly.LAYERS]
for corpus, golden, splits in FOLDERS:
    for config in CONFIGS:
        specs, _ = benchmark.pattern_specs(["single", "smart"], Path(corpus), off=config)
        for name, (cache_name, settings, fn) in specs.items():
            while getattr(fn, "inner", None) is not None:
                fn = fn.inner
            if not getattr(fn, "layers", ()):
                continue   # no layer key in its answers: lab.cache --rekey reached them
            for split in splits:
                moved = have = missing = 0
                for item in eval_items(golden, 0, Path(corpus), **({"split": split} if split else {})):
                    new = harness.answer_key(cache_name, fn, settings, item)
                    harness.code_key = lambda m, root=None: old_key(m) if m in fn.layers else real(m, root)
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
                print(f"{golden} {split} {name} -{','.join(config) or '(none)'}: moved {moved}, already current "
                      f"{have}, in neither {missing}", flush=True)
