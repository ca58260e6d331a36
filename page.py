"""The demo page's HTML (app.py serves it): result dicts in, HTML strings out. Pure functions: no model, no
browser, so tests check the markup directly and tests/test_app.py checks it again in a real Chromium.

- render_answer(result, verdicts): the short answer, each sentence with one chip per citation coloured by the
  judge's verdict (supported / unsupported / invalid: an ID the model invented / unchecked), the cited chunk
  and the sentence it backs in the chip's pop-up, uncited sentences marked, then the sources given.
- render_trace(result, pattern): the route in one line, every trace step in order, then the cost table.
- render_live(steps, pattern): the steps finished so far, while the pattern works (steps.watch()).
- render_status(), render_engine(): the status line and the engine line.
"""
import html
from pathlib import Path

from citations import answer_status
from lab import choice, links, steps
from layers import answer_check, disputes, spans

MAX_SOURCE_CHARS = 1500     # of a cited chunk shown in its pop-up
CSS = """
.answer{position:relative}.chip{display:inline-block;position:static;margin:0 2px;font:600 12px/1.6 monospace;\
border-radius:9px;vertical-align:baseline}
.chip>summary{list-style:none;cursor:pointer;padding:0 7px;border-radius:9px}
.chip>summary::-webkit-details-marker{display:none}
.chip.supported>summary{background:#c8f0cf;color:#0d5b1c;border:1px solid #2e9e46}
.chip.unsupported>summary{background:#fbd3d0;color:#8a1c13;border:1px solid #d9473b}
.chip.invalid>summary{background:repeating-linear-gradient(45deg,#eee,#eee 4px,#ccc 4px,#ccc 8px);color:#444;\
border:1px dashed #666}
.chip.unchecked>summary,.chip.stopped>summary{background:#e8e8f4;color:#334;border:1px solid #889}
.chip.checking>summary{background:#eee;color:#777;border:1px solid #bbb}
.uncited{display:inline-block;margin-left:4px;padding:0 6px;font:600 11px/1.6 sans-serif;color:#8a5a00;\
background:#fff1c7;border:1px solid #d9a400;border-radius:9px}
.recited{display:inline-block;margin-left:4px;font:11px/1.6 sans-serif;color:#555;font-style:italic}
.pop{display:none;position:absolute;z-index:50;left:0;right:0;padding:8px 10px;background:#fff;color:#111;
 border:1px solid #999;border-radius:6px;box-shadow:0 4px 14px rgba(0,0,0,.25);font:13px/1.4 sans-serif;\
white-space:normal}
.chip:hover>.pop,.chip[open]>.pop{display:block}
.pop .src{max-height:14em;overflow:auto;background:#f6f6f6;padding:4px 6px;margin:4px 0}
.sentence{margin:6px 0;line-height:1.9}.sentence.unsupported{text-decoration:underline wavy #d9473b}
.short{font-size:1.25em;font-weight:700;margin-bottom:6px}.short.unverified{color:#8a1c13}\
.short.unconfirmed{font-weight:400;font-size:1em}.chip.verified{background:#c8f0cf}.chip.supported{background:#fff1c2}\
.chip.unanswered,.chip.disputed{background:#fbd3d0}
.choice{margin:2px 0 8px;padding:6px 10px;border-radius:6px;background:#fdf3e1;border:1px solid #d9962b}\
.choice ul{margin:4px 0 0 0;padding-left:20px}.choice .from{color:#555;font-size:.9em}.choice .newer{margin-left:6px;\
padding:0 6px;border-radius:8px;background:#e3ecfb;font-size:.85em}.choice .mine{color:#666;font-size:.9em}
.said{color:#666;margin-bottom:6px}.said s{color:#999}.notice{padding:6px 10px;border-radius:6px;background:#fff1c7}
.status{padding:6px 10px;border-radius:6px;background:#eef3ff}.status.error{background:#fbd3d0}\
.status.done{background:#c8f0cf}\
.status.stopped{background:#fdeccb}.status.queued{background:#f1f1f1}
.trace li{margin:3px 0}.trace .route{font-weight:700;margin-bottom:6px}.trace table td{padding:1px 8px}
"""


def esc(x):
    return html.escape(str(x), quote=True)


def render_status(text, kind="busy"):
    return f'<div class="status {kind}" data-kind="{kind}">{esc(text)}</div>'


def _chip(label, verdict, pop, sentence):
    word = {"supported": "supports the sentence", "unsupported": "does not support the sentence",
            "invalid": "no such source was given to the model: the citation was dropped",
            "unchecked": "not checked (the citation check failed)", "checking": "being checked…",
            "stopped": "not checked: the answer was stopped"}[verdict]
    mark = {"supported": "✓", "unsupported": "✗", "invalid": "?", "unchecked": "·", "checking": "…",
            "stopped": "·"}[verdict]
    return (f'<details class="chip {verdict}" data-id="{esc(label)}" data-verdict="{verdict}">'
            f'<summary title="{esc(label)}: {esc(word)}">{esc(label)} {mark}</summary><div class="pop">'
            f'<b>[{esc(label)}]</b> {esc(word)}{pop}<div>cited for: <i>{esc(sentence)}</i></div></div></details>')


def _source_html(p):
    text = " ".join(str(p.get("text", "")).split())
    cut = text[:MAX_SOURCE_CHARS] + ("…" if len(text) > MAX_SOURCE_CHARS else "")
    return (f'<div>document <b>{esc(p.get("title") or p.get("doc"))}</b> <code>{esc(p.get("doc"))}</code>, '
            f'chunk <code>{esc(p.get("chunk_id"))}</code>{_where_html(p)}{_via_html(p)}</div>'
            f'<div class="src">{esc(cut)}</div>')


def _where_html(p):
    """Where a passage of a PDF, Word or HTML file comes from: ', handbook.pdf p. 12 · Admissions'."""
    return f', <span class="where" data-where>{esc(p["where"])}</span>' if p.get("where") else ""


def _via_html(p):
    """A chain passage's link: ', reached from S1 via 'Windhoek' (its title)'."""
    return f', <span class="via" data-via>{esc(links.describe(p["via"]))}</span>' if p.get("via") else ""


LIVE = {"writing": "being written: nothing in it is checked yet",
        "checking": "written; its citations are being checked",
        "stopped": "stopped: what the model had written, unchecked"}


def render_answer(result, verdicts, notice=None, dispute=None, checked=None, live=None):
    """A result (generate()-shaped) and verify(result)'s verdicts (None: not checked) -> the answer's HTML:
    the short answer, a DISPUTED chip with every answer and its sources when `dispute` (disputes.check's dict)
    says the passages disagree, each sentence with one chip per citation (class and data-verdict supported /
    unsupported / invalid / unchecked), uncited sentences marked, then the sources the model was given.
    checked: answer_check.check()'s dict; the short answer is the bold headline only when it says "verified",
    otherwise it shows under a chip saying what the check found (without a check: "not confirmed").
    live: the answer while it is made, "writing" / "checking" (verdicts so far: a sentence past them has grey
    "checking" chips) / "stopped"; its headline is never bold, and says that instead of a status."""
    by_id = {p["id"]: p for p in result.get("passages", [])}
    invalid = {}
    for bad in result.get("invalid_ids", []):
        invalid.setdefault(bad["sentence"], []).append(bad["id"])
    out = [f'<div class="notice">{esc(notice)}</div>'] if notice else []
    sentences = answer_status(result, verdicts)
    checked = checked or ({"status": "unanswered" if sentences == "unverified" else "supported", "reasons": []}
                          if sentences not in ("idk", "failed", "unchecked") else None)
    status = checked["status"] if checked else sentences
    said = f'data-said="{esc(result.get("answer") or "")}"'   # the short answer as written, whatever it is shown as
    if live:
        out.append(f'<div class="short unconfirmed" data-answer {said} data-status="{live}">'
                   f'{esc(result.get("answer") or "…")} <span class="chip checking" data-check="{live}">'
                   f'{esc(LIVE[live])}</span></div>')
    elif status == "verified":  # the calibrated answer check passed: the only bold headline
        title = f"score {checked['score']:.2f}, calibration {checked['calibration']}"
        out.append(f'<div class="short" data-answer {said} data-status="verified">{esc(result.get("answer", ""))}'
                   f' <span class="chip verified" data-check="verified" title="{esc(title)}">verified</span></div>')
    elif dispute and dispute.get("disputed") and status == "disputed":   # a choice, no headline: render_choice
        pass
    elif checked and status not in ("idk", "failed", "unchecked"):  # shown, never as the headline
        why = "; ".join(checked["reasons"]) or answer_check.STATUS_TEXT[status]
        out.append(f'<div class="short unconfirmed" data-answer="" {said} data-status="{status}">'
                   f'<span class="chip {status}" data-check="{status}">{esc(answer_check.STATUS_TEXT[status])}</span>'
                   f'</div><div class="said">the model said: {esc(result.get("answer", ""))}'
                   f' <span class="why">({esc(why)})</span></div>')
    else:  # "I don't know", a failed reply, or a check that could not run (not bold: nothing vouches for it)
        weight = " unconfirmed" if status == "unchecked" else ""
        out.append(f'<div class="short{weight}" data-answer {said} data-status="{status}">'
                   f'{esc(result.get("answer", ""))}</div>')
    if dispute and dispute.get("disputed"):
        out.append(render_choice(result, dispute, said))
    if result.get("error"):
        out.append(f'<div class="notice">The model\'s reply was unusable: {esc(result["error"])}</div>')
    unknown = {"writing": "checking", "checking": "checking", "stopped": "stopped"}.get(live, "unchecked")
    for n, s in enumerate(result.get("sentences", [])):
        v = verdicts[n] if verdicts is not None and n < len(verdicts) else None
        chips = [_chip(c, unknown if v is None else "supported" if v["precise"].get(c) else "unsupported",
                       _source_html(by_id[c]) if c in by_id else "", s["text"]) for c in s["cites"]]
        chips += [_chip(i, "invalid", "", s["text"]) for i in invalid.get(n, [])]
        if not s["cites"]:
            chips.append('<span class="uncited" data-uncited title="no source cited: nothing backs this sentence">'
                         'uncited</span>')
        kind = ("checking" if live else "unchecked") if v is None else "supported" if v["supported"] else "unsupported"
        fixed = [f'<span class="recited" data-recited="{esc(",".join(f["from"]))}">{esc(spans.recited_line(f))}</span>'
                 for f in result.get("recited", []) if f["sentence"] == n]
        out.append(f'<div class="sentence {kind}" data-sentence="{n}">{esc(s["text"])} {"".join(chips + fixed)}</div>')
    if result.get("passages"):
        rows = "".join(f'<li><b>[{esc(p["id"])}]</b> {esc(p.get("title") or p.get("doc"))} '
                       f'<code>{esc(p["chunk_id"])}</code>{_where_html(p)}'
                       f'</li>' for p in result["passages"])
        out.append(f"<details><summary>sources given to the model ({len(result['passages'])})</summary>"
                   f"<ul>{rows}</ul></details>")
    return f'<div class="answer">{"".join(out)}</div>'


def render_choice(result, dispute, said=""):
    """A disputed answer as a choice, never a headline: "The sources disagree", then each answer the sources give
    (plain text, none bold), its sources with file, page and section, the date a source gives itself, and "newer"
    on the side whose date is the latest (disputes.sides; dispute["sides"] when the check made them with the
    corpus); the side the model's answer belongs to says so."""
    options = dispute.get("sides") or disputes.sides(dispute, result.get("passages", []))
    items = []
    for n, side in enumerate(options):
        srcs = "; ".join(f'<span class="src" data-source="{esc(s["id"])}" data-date="{esc(s["date"])}">'
                         f'{esc(choice.source_text(s))}</span>' for s in side["sources"])
        mine = ' <span class="mine">(the model\'s answer)</span>' if n == dispute.get("shown_in") else ""
        newer = ' <span class="newer" data-newer>newer</span>' if side["newer"] else ""
        items.append(f'<li class="side" data-side="{esc(side["answer"])}">{esc(side["answer"])}{mine}{newer}'
                     f'<div class="from">{srcs}</div></li>')
    return (f'<div class="choice" data-disputed="{len(options)}" data-status="disputed" {said}>'
            f'<div class="lead">The {choice.who(dispute)} disagree. They give '
            f'{len(options)} answers; which holds depends on the source:</div><ul>{"".join(items)}</ul></div>')


def route_line(result, pattern):
    """The route taken, in one line: 'smart router -> iterative; learned router: multi-hop, P(multi) 0.93'."""
    parts = [f"{pattern} -> {result.get('mode', pattern)}"]
    parts += [steps.describe(s).removeprefix("route: ") for s in result.get("trace", []) if s.get("step") == "route"]
    if result.get("fallback"):
        parts.append(f"fell back to single-hop: {result['fallback']}")
    if "action" in result:
        parts.append(f"CRAG action: {result['action']}")
    if "retrieval" in result:
        parts.append("retrieved" if result["retrieval"] else "answered without retrieval")
    if "triggers" in result:
        parts.append(f"{result['triggers']} triggered retrievals")
    return "; ".join(parts)


def _steps_html(trace):
    return "".join(f'<li data-step="{esc(s.get("step"))}">{esc(steps.describe(s))}</li>' for s in trace)


def render_trace(result, pattern, judge_cost=None, info=None, checks=()):
    """The trace panel: the route, every step in order, each check after the answer with its seconds ((what,
    seconds) pairs), then cost (answer, citation check) and the engine."""
    steps = _steps_html(result.get("trace", [])) + "".join(
        f'<li data-step="check">{esc(what)}: {seconds:.1f} s</li>' for what, seconds in checks)
    rows = [("answer", result.get("cost") or {})] + ([("citation check", judge_cost)] if judge_cost else [])
    cost = "".join(f"<tr><td>{name}</td><td>{c.get('calls', 0)}</td><td>{c.get('prompt_tokens', 0)}</td>"
                   f"<td>{c.get('completion_tokens', 0)}</td><td>{c.get('seconds', 0):.1f}</td>"
                   f"<td>{c.get('wall_seconds', c.get('seconds', 0)):.1f}</td></tr>" for name, c in rows)
    build = f", llama.cpp build {esc(info['build'])}" if info and info.get("build") else ""
    engine = f"<div>engine {esc(info['engine'])}, model {esc(info['model'])}{build}</div>" if info else ""
    return (f'<div class="trace"><div class="route" data-route>route: {esc(route_line(result, pattern))}</div>'
            f"<ol>{steps}</ol><table><tr><th></th><th>LLM calls</th><th>prompt tok</th><th>completion tok</th>"
            f"<th>LLM s</th><th>wall s</th></tr>{cost}</table>{engine}</div>")


def render_pending():
    return ('<div class="answer pending">The answer shows here as the model writes it, each sentence as soon as it is '
            'complete; its citations are checked once it is done.</div>')


def render_live(seen, pattern):
    """The trace panel while the pattern works: the steps finished so far, then a line saying it goes on."""
    done = _steps_html(seen)
    return (f'<div class="trace" data-live><div class="route">{esc(pattern)}: {len(seen)} steps so far</div>'
            f'<ol>{done}</ol><div class="working">working on the next step…</div></div>')


def render_engine(info, corpus):
    gguf = f", GGUF {Path(info['gguf']).name}" if info.get("gguf") else ""
    build = f", llama.cpp build <b>{esc(info['build'])}</b>" if info.get("build") else ""   # native or wheel
    return (f'<div class="engine" data-engine="{esc(info["engine"])}">engine <b>{esc(info["engine"])}</b>, model '
            f'<b>{esc(info["model"])}</b> at {esc(info["host"])}{esc(gguf)}{build}; corpus <code>{esc(corpus)}</code>'
            '</div>')
