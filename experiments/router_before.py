"""The router of commit f123c37 (before issue 45) beside today's on the test halves: run from the repository root,

    python -m experiments.router_before --json results/issue45/router_before.json

It loads router.py as it was at f123c37 (git show) and scores: as deployed then (fitted on all of golden.json, so
it has seen golden.json's test half), fitted on golden.json's dev half, and fitted on the dev halves of both golden
files (the old features, the new training data); then today's router.py as deployed (router.load_router: the dev
halves of both). Each on the test half of each golden file, with accuracy per source, and for today's router the
paired count against the old one fitted on golden.json dev: questions only the old one routes right, only the new
one (a McNemar exact p from those two counts). Aggregates only: no test question is printed."""
import argparse
import importlib.util
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

import router
from golden import split_of

ROOT = Path(__file__).resolve().parents[1]

BASE = "f123c37"
FILES = {"hotpotqa/musique": ROOT / "golden.json", "catalogue": ROOT / "catalogue" / "golden.json"}


def old_router():
    src = subprocess.run(["git", "-C", str(ROOT), "show", f"{BASE}:router.py"], capture_output=True, text=True,
                         check=True).stdout
    path = Path(tempfile.mkdtemp()) / "router_before.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("router_before", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def mcnemar(b, c):
    """Two-sided exact McNemar p from the discordant counts (a binomial test at 1/2)."""
    from scipy.stats import binomtest
    return float(binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    r = old_router()
    gold = {k: json.loads(p.read_text()) for k, p in FILES.items()}
    half = {(k, s): [g for g in items if split_of(g) == s] for k, items in gold.items() for s in ("dev", "test")}
    fits = {f"{BASE} deployed (all golden.json)": (r, r.train_router(gold["hotpotqa/musique"])),
            f"{BASE} on golden.json dev": (r, r.train_router(half["hotpotqa/musique", "dev"])),
            f"{BASE} on both dev halves": (r, r.train_router(half["hotpotqa/musique", "dev"]
                                                             + half["catalogue", "dev"])),
            "today, deployed (both dev halves)": (router, router.load_router(Path(tempfile.mkdtemp()) / "r.json"))}
    right = {(name, k): np.array([mod.learned_route(g["question"], m)[0] == (g["type"] == "multi")
                                  for g in half[k, "test"]]) for name, (mod, m) in fits.items() for k in FILES}
    out = {name: {k: {"accuracy": float(right[name, k].mean()), "n": len(right[name, k]), "by_source": {
        s: float(np.mean([ok for g, ok in zip(half[k, "test"], right[name, k]) if g["source"] == s]))
        for s in sorted({g["source"] for g in half[k, "test"]})}} for k in FILES} for name in fits}
    old, new = f"{BASE} on golden.json dev", "today, deployed (both dev halves)"
    for k in FILES:
        b, c = int((right[old, k] & ~right[new, k]).sum()), int((~right[old, k] & right[new, k]).sum())
        out[new][k].update(only_old_right=b, only_new_right=c, mcnemar_p=mcnemar(b, c))
    print(f"routers on the test halves (old features: {', '.join(r.SURFACE_FEATURES)})")
    print(f"{'router':36}" + "".join(f"{k + ' test':>24}" for k in FILES))
    for name, row in out.items():
        print(f"{name:36}" + "".join(f"{row[k]['accuracy']:17.3f} (n={row[k]['n']})" for k in FILES))
    for k in FILES:
        o = out[new][k]
        print(f"{k} test, paired with '{old}': only the old right {o['only_old_right']}, only the new right "
              f"{o['only_new_right']}, McNemar exact p = {o['mcnemar_p']:.3f}; by source {o['by_source']}")
    if args.json:
        args.json.write_text(json.dumps({"base": BASE, "test": out}, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
