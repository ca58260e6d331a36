"""What a cited JSON answer says while the model is still writing it (generate.answer_schema's shape):

    so_far('{"sentences": [{"text": "A b.", "sources": ["S1"]}, {"text": "C')  -> ([("A b.", ["S1"])], None)

A sentence counts once it is complete: another one has begun after it, or the list has closed. The short answer
counts once its closing quote is written. jiter (pydantic's JSON parser) reads the unfinished text in its partial
mode, which drops an unfinished string rather than guessing its end. No model call, no I/O.
"""
import re

import jiter


def so_far(text):
    """(complete sentences as [(text, sources)], the short answer or None) of a reply cut anywhere."""
    try:   # "on" drops an unfinished string; "trailing-strings" keeps it, so the answer's key shows once begun
        reply, begun = (jiter.from_json(text.encode(), partial_mode=mode) if text.strip() else {}
                        for mode in ("on", "trailing-strings"))
    except ValueError:
        return [], None
    if not isinstance(reply, dict) or not isinstance(begun, dict):
        return [], None
    items = reply.get("sentences") if isinstance(reply.get("sentences"), list) else []
    closed = "answer" in begun or bool(re.search(r"\}\s*\]", text))   # '}]' closes the list of sentences
    done = [s for n, s in enumerate(items) if isinstance(s, dict) and (closed or n < len(items) - 1)]
    sentences = [(str(s.get("text", "")), [str(i) for i in s.get("sources") or []]) for s in done if s.get("text")]
    answer = reply.get("answer")
    return sentences, (answer if isinstance(answer, str) else None)


class Watcher:
    """Calls on_sentence(n, text, sources) once per sentence as it completes, and on_answer(answer) once, from the
    text so far that llm.chat's on_text hands it. A text that does not go on from the last one is a new reply (a
    pattern may call generate() more than once): on_begin() is called, and its sentences count from 0 again."""

    def __init__(self, on_sentence=None, on_answer=None, on_begin=None):
        self.on_sentence, self.on_answer, self.on_begin = on_sentence, on_answer, on_begin
        self.shown, self.answered, self.last = 0, False, ""

    def __call__(self, text):
        if not text.startswith(self.last):
            self.shown, self.answered = 0, False
            if self.on_begin:
                self.on_begin()
        self.last = text
        sentences, answer = so_far(text)
        for n in range(self.shown, len(sentences)):
            if self.on_sentence:
                self.on_sentence(n, *sentences[n])
        self.shown = max(self.shown, len(sentences))
        if answer is not None and not self.answered:
            self.answered = True
            if self.on_answer:
                self.on_answer(answer)
