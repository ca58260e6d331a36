"""What router_eval.py prints and draws (week 6): one row per router (accuracy overall and per source, wasted
decompositions and misses, decision time, what the errors cost), one row per mode and source on the multi
questions, and the routers' confusion matrices side by side in one PNG. The figures come from router_eval.py.

    python router_eval.py --modes "" --no-llm      # the router table and results/router_confusion.png, no model call

Expected: a header "router  n accuracy hotpotqa musique catalogue wasted misses ms/q  cost of the errors", one row
per router (learned, learned+embed, llm, learned (same q)) and two lines saying what wasted and misses are;
results/router_eval.txt holds a full run. The PNG: one matrix per router, titled with its accuracy and n.
"""
import numpy as np


def plot_confusion(routers, path):
    """The routers' confusion matrices (golden type against routed as) side by side, written to `path`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(routers), figsize=(3.6 * len(routers), 3.4), squeeze=False)
    for ax, (name, r) in zip(axes[0], routers.items()):
        m = np.array(r["matrix"])
        ax.imshow(m, cmap="Blues")
        for (i, j), v in np.ndenumerate(m):
            ax.text(j, i, str(v), ha="center", va="center", color="white" if v > m.max() / 2 else "black")
        ax.set(xticks=[0, 1], yticks=[0, 1], xticklabels=["single", "multi"], yticklabels=["single", "multi"],
               xlabel="routed as", ylabel="golden type", title=f"{name}: {r['accuracy']:.1%} (n={r['n']})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def print_routers(routers, modes):
    """One row per router; the errors priced by the best multihop mode against single (`modes`: the mode table)."""
    single, multis = modes.get("single"), [m["all"] for k, m in modes.items() if k != "single"]
    best = max(multis, key=lambda m: m["f1"]) if multis and single else None
    print(f"\n{'router':17}{'n':>4}{'accuracy':>9}{'hotpotqa':>9}{'musique':>9}{'catalogue':>10}{'wasted':>7}{'misses':>7}"
          f"{'ms/q':>10}  cost of the errors")
    for name, r in routers.items():
        (tn, fp), (fn, tp) = r["matrix"]
        cost = "(run single and a multihop mode to price them)"
        if best:
            ds, df = best["seconds"] - single["all"]["seconds"], best["f1"] - single["all"]["f1"]
            cost = f"wasted {fp * ds:+.0f} s, misses {-fn * df:+.2f} F1 (summed)"
        ms = f"{r['seconds_per_question'] * 1000:10.2f}" if "seconds_per_question" in r else f"{'-':>10}"
        src = "".join(f"{r['by_source'].get(s, float('nan')):{w}.3f}" for s, w in (("hotpotqa", 9), ("musique", 9),
                                                                                  ("catalogue", 10)))
        print(f"{name:17}{r['n']:4d}{r['accuracy']:9.3f}{src}{fp:7d}{fn:7d}{ms}  {cost}")
    print("wasted: single questions sent to decomposition, each costing the best multihop mode's extra seconds;\n"
          "misses: multi questions sent to single-hop, each losing the best mode's F1 gain (both measured below)")


def print_modes(modes):
    """One row per mode and split (all, then each source) on the multi questions."""
    print(f"\nmulti questions: {'mode':10}{'split':>10}{'n':>4}{'F1':>7}{'EM':>7}{'recall':>8}{'rec_all':>8}"
          f"{'calls':>7}{'s/q':>7}{'fallbk':>7}{'errors':>7}")
    for mode, by in modes.items():
        for split, m in by.items():
            print(f"{'':17}{mode:10}{split:>10}{m['n']:4d}{m['f1']:7.3f}{m['em']:7.3f}{m['recall']:8.3f}"
                  f"{m['recall_all']:8.3f}{m['llm_calls']:7.1f}{m['seconds']:7.1f}{m['fallbacks']:7d}{m['errors']:7d}")
