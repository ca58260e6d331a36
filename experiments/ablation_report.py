"""Issue 59's ablation table: what each layer gains and what it costs, read from `benchmark.py --ablation` runs
(full strength, then full strength minus each layer, on the same questions).

    python -m experiments.ablation_report results/issue59/ablation_golden_test.json \
        results/issue59/ablation_catalogue_test.json results/issue59/ablation_debian_all.json

Expected output: per run and pattern, one row for full strength and one per layer left out. A layer's gain is full
strength minus the run without it (positive: the layer helps): F1, right answers, citation precision, verified
precision and the share of right answers verified (coverage). Its cost beside it: model calls and seconds per answer
(answering, the judge and the answer check together), the right answers shown disputed and the answers with a
citation quarantined, each as full strength minus the run without it. Then, per layer, whether it gains on any run
(or on the --verdict-from runs only): `gain` when one of its target figures (TARGETS) is at least MARGIN better at
full strength on such a run, else `none`.
A run that lacks a configuration (stopped part-way) shows only what it has.
Not handled: the significance of a gain (n of 40-268: a difference under MARGIN is read as no gain).
"""
import argparse
import json
import sys
from pathlib import Path

from benchmark import split_row
from pattern_cli import fmt

MARGIN = 0.01
TARGETS = {  # what each layer is for: the figures it must move to earn its place
    "spans": ("answer_f1", "right_share", "citation_precision"),   # its third part moves citations (assembly.LAYERS)
    # the answer check reads its verdicts: without it nothing is verified. (citation precision is scored by the judge
    # in use, so it cannot rank two judges: judge_eval.py does, on labelled pairs)
    "judge_answers": ("verified_coverage", "verified_precision"),
    "quarantine": ("citation_precision", "verified_precision"),   # its main gain is on injected text (injection.py)
    "disputes": ("verified_precision",),                          # ... and on planted false pages (disputes eval)
    "answer_check": ("verified_precision",),
    "links": ("answer_f1", "right_share"),
}
GAINS = [("answer_f1", "F1"), ("right_share", "right"), ("citation_precision", "c-prec"),
         ("verified_precision", "v-prec"), ("verified_coverage", "coverage")]


def costs(rows):
    """Per answer: model calls and seconds (answer, judge and answer check), the right answers shown disputed, the
    answers with a citation quarantined."""
    n, right = max(1, len(rows)), [r for r in rows if r.get("right")]
    total = lambda *keys: sum(sum(r.get(k) or 0 for k in keys) for r in rows) / n
    return {"calls": total("calls", "judge_calls", "check_calls"),
            "seconds": total("seconds", "judge_seconds", "check_seconds"),
            "right_disputed": sum(bool(r.get("disputed")) for r in right) / max(1, len(right)),
            "quarantined": sum(any(v.get("quarantined") for v in r.get("verdicts", [])) for r in rows) / n}


def configurations(run):
    """{pattern: {layer or '': (figures, costs)}} of one ablation run ('' is full strength)."""
    out = {}
    for name, rows in run["rows"].items():
        pattern, layer = split_row(name)
        out.setdefault(pattern, {})[layer] = (run["table"]["all"][name], costs(rows))
    return out


def delta(full, without, key):
    x, y = full.get(key), without.get(key)
    return None if x is None or y is None else x - y


def report(runs):
    """-> (lines to print, {layer: [(run, pattern, target, gain)]})"""
    lines, gains = [], {}
    for path, run in runs:
        for pattern, configs in configurations(run).items():
            if "" not in configs:
                continue
            full, full_cost = configs[""]
            n = full.get("questions")
            lines.append(f"\n## {path}: {pattern} (n={n}); a layer's columns: full strength minus the run without it")
            lines.append(f"{'layer':14}" + "".join(f"{label:>9}" for _, label in GAINS)
                         + f"{'calls/q':>9}{'s/q':>8}{'right disp':>11}{'quarant':>9}")
            lines.append(f"{'(full)':14}" + "".join(f"{fmt(full.get(k)):>9}" for k, _ in GAINS)
                         + f"{full_cost['calls']:9.2f}{full_cost['seconds']:8.1f}"
                         + f"{full_cost['right_disputed']:11.3f}{full_cost['quarantined']:9.3f}")
            for layer, (figures, cost) in configs.items():
                if not layer:
                    continue
                more = {k: full_cost[k] - cost[k] for k in cost}   # what the layer adds
                lines.append(f"{'-' + layer:14}" + "".join(f"{signed(delta(full, figures, k)):>9}" for k, _ in GAINS)
                             + f"{more['calls']:+9.2f}{more['seconds']:+8.1f}{more['right_disputed']:+11.3f}"
                             + f"{more['quarantined']:+9.3f}")
                for target in TARGETS.get(layer, ()):
                    gains.setdefault(layer, []).append((str(path), pattern, target, delta(full, figures, target)))
    return lines, gains


def only(gains, runs):
    """The gains measured on `runs` (paths as given to report()); None keeps every run's."""
    keep = None if runs is None else {str(r) for r in runs}
    return {layer: [g for g in found if keep is None or g[0] in keep] for layer, found in gains.items()}


def verdicts(gains):
    """{layer: 'gain' or 'none'}: gain when a target figure is at least MARGIN better at full strength somewhere."""
    return {layer: "gain" if any(g is not None and g >= MARGIN for *_, g in found) else "none"
            for layer, found in gains.items()}


def header(runs):
    """Where the figures come from: per run, its command, date, model and questions per pattern."""
    out = []
    for path, run in runs:
        info, n = run.get("run", {}), len(run.get("questions", ()))
        model = run.get("model", {})
        out.append(f"# {path}: `{info.get('command', '?')}` ({info.get('date', '?')}; {model.get('engine', '?')} "
                   f"{model.get('model', '?')}, {info.get('machine', {}).get('threads', '?')} thread(s); "
                   f"n={n} per configuration)")
    return out


def signed(x):
    """A change as the table prints it: '+0.012', 'n/a' when either side has no value (pattern_cli.fmt, signed)."""
    return "n/a" if x is None else f"{x:+.3f}"


def main():
    ap = argparse.ArgumentParser(description="Each layer's gain and cost from benchmark.py --ablation runs.")
    ap.add_argument("runs", nargs="+", type=Path, help="benchmark.py --ablation --json files")
    ap.add_argument("--verdict-from", nargs="+", type=Path, metavar="RUN",
                    help="count only these runs for the verdicts (for example the sets built differently from the "
                         "data a layer was chosen on); default: every run")
    ap.add_argument("--json", type=Path, help="write the gains and verdicts here")
    args = ap.parse_args()
    try:
        runs = [(p, json.loads(p.read_text(encoding="utf-8"))) for p in args.runs]
    except (OSError, ValueError) as e:
        sys.exit(f"ablation_report: {e}")
    unknown = set(map(str, args.verdict_from or ())) - set(map(str, args.runs))
    if unknown:
        sys.exit(f"ablation_report: --verdict-from names a file not among the runs: {', '.join(sorted(unknown))}")
    print("\n".join(["# python -m experiments.ablation_report " + " ".join(sys.argv[1:])] + header(runs)))
    lines, gains = report(runs)
    print("\n".join(lines))
    gains = only(gains, args.verdict_from)
    found = verdicts(gains)
    where = ", ".join(map(str, args.verdict_from)) if args.verdict_from else "any run"
    print(f"\nper layer, on {where} (gain: a target figure at least {MARGIN} better with it):")
    for layer, verdict in found.items():
        best = max((g for g in gains[layer] if g[3] is not None), key=lambda g: g[3], default=None)
        where = f"  best: {best[2]} {best[3]:+.3f} ({best[1]}, {best[0]})" if best else ""
        print(f"  {layer:14} {verdict:5}{where}")
    if args.json:
        args.json.write_text(json.dumps({"gains": gains, "verdicts": found}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
