"""The router of commit f123c37 (before issue 45) on the dev/test halves: run from the repository root,

    python results/issue45/router_before.py --json results/issue45/router_before.json

It loads router.py as it was at f123c37 (git show) and scores: as deployed then (fitted on all of golden.json),
fitted on golden.json's dev half, and fitted on the dev halves of both golden files (today's features, the new
training data), each on the test half of each golden file; plus the pooled 5-fold CV within the dev halves."""
import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from lab.links import split_of  # noqa: E402

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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    r = old_router()
    gold = {k: json.loads(p.read_text()) for k, p in FILES.items()}
    half = {(k, s): [g for g in items if split_of(g) == s] for k, items in gold.items() for s in ("dev", "test")}
    acc = lambda m, items: float(np.mean([r.learned_route(g["question"], m)[0] == (g["type"] == "multi")
                                          for g in items]))
    fits = {"deployed (all golden.json)": r.train_router(gold["hotpotqa/musique"]),
            "golden.json dev": r.train_router(half["hotpotqa/musique", "dev"]),
            "both dev halves": r.train_router(half["hotpotqa/musique", "dev"] + half["catalogue", "dev"])}
    out = {name: {k: {"accuracy": acc(m, half[k, "test"]), "n": len(half[k, "test"])} for k in FILES}
           for name, m in fits.items()}
    print(f"router at {BASE} (features {', '.join(r.SURFACE_FEATURES)}), scored on the test halves")
    print(f"{'fitted on':28}" + "".join(f"{k + ' test':>24}" for k in FILES))
    for name, row in out.items():
        print(f"{name:28}" + "".join(f"{row[k]['accuracy']:17.3f} (n={row[k]['n']})" for k in FILES))
    if args.json:
        args.json.write_text(json.dumps({"base": BASE, "test": out}, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
