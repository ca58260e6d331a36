"""Is a streamed answer the same answer? generate() on golden questions, with the reply streamed as the page and the
CLIs stream it (a Watcher reading each piece, a cancel Event that is never set) and not streamed, compared byte for
byte: the model's reply text, its token counts, and generate()'s dict.

    python -m experiments.stream_identity --limit 20 --json results/issue46/stream_identity.json

Each question's prompt is asked once first and the reply dropped: llama.cpp's reply to a prompt read anew can differ
from its reply to the same prompt resumed from its prompt cache (issue 46's first CI run), so both compared calls
start from the same cache state. Passages: retrieve_chunks(question, 4), as generate() retrieves them. Expected:
~25 s per question on the embedded engine; a line per question, then "identical: 20/20 replies, 20/20 results".
"""
import json
import threading

import llm
from experiments import probe_cli
from generate import generate
from lab import partial
from lab.cache import write_json
from retrieve import GOLDEN, load_golden, retrieve_chunks

SAME = ("answer", "written", "sentences", "invalid_ids", "recited", "idk", "error", "spelled")  # generate()'s fields


def replies(run):
    """run() with every llm.chat reply recorded: -> (run's value, [(reply text, prompt tokens, completion tokens)])."""
    seen, real = [], llm.chat

    def recording(*args, **kwargs):
        response = real(*args, **kwargs)
        seen.append((response.message.content, response.prompt_eval_count, response.eval_count))
        return response
    llm.chat = recording
    try:
        return run(), seen
    finally:
        llm.chat = real


def main():
    args = probe_cli.parse("stream_identity", "Streamed against unstreamed answers on golden questions, byte for "
                           "byte.", limit=20, limit_help="golden questions, in file order (20)", golden=GOLDEN)
    rows = []
    for n, item in enumerate(load_golden(args.golden)[:args.limit], 1):
        q = item["question"]
        passages = retrieve_chunks(q, 4)
        generate(q, passages=passages)   # the prompt is in llama.cpp's cache for both calls below
        plain, plain_replies = replies(lambda: generate(q, passages=passages))
        pieces = []
        watch = partial.Watcher(lambda i, text, ids: pieces.append(text))
        streamed, streamed_replies = replies(lambda: generate(q, passages=passages, watch=watch,
                                                              cancel=threading.Event()))
        row = {"question": q, "same_reply": plain_replies == streamed_replies,
               "same_result": all(plain.get(k) == streamed.get(k) for k in SAME),
               "sentences_seen_while_written": len(pieces), "sentences": len(streamed["sentences"]),
               "reply": plain_replies[0][0] if plain_replies else None}
        rows.append(row)
        print(f"{n}/{args.limit} same reply {row['same_reply']}, same result {row['same_result']}, "
              f"{row['sentences_seen_while_written']}/{row['sentences']} sentences seen as written: {q[:60]}",
              flush=True)
    counts = {"questions": len(rows), "same_reply": sum(r["same_reply"] for r in rows),
              "same_result": sum(r["same_result"] for r in rows), "engine": llm.engine_info(portable=True)}
    print(f"identical: {counts['same_reply']}/{len(rows)} replies, {counts['same_result']}/{len(rows)} results")
    if args.json:
        write_json(args.json, {**counts, "rows": rows})
    return json.dumps(counts)


if __name__ == "__main__":
    main()
