"""One question answered, then checked, on a worker thread, with all it has so far readable at any moment: what the
demo page draws while the model writes and the judge reads (app.py).

    live = Live(lambda q: multihop.smart_answer(q), stop=threading.Event())
    live.start("Who designed Ashford Bridge?")
    while live.running():
        live.changed.wait(0.5); live.changed.clear()
        print(live.stage, live.written, live.verdicts)   # sentences complete so far, then verdicts one by one
    live.result, live.dispute, live.verdicts, live.checked, live.checks

While the answer is written, `written` holds its complete sentences [(text, IDs as written)] and `short` the short
answer once written (lab/partial.py reads the streamed JSON); then `result` (the pattern's dict), `dispute`,
`verdicts` as each sentence's is reached, and `checked` (answer_check). `checks` lists each check with its seconds.
`changed` is set whenever one of them has moved. Setting `stop` aborts the model call under way (llm.cancelling);
`stopped` then says so and nothing of the aborted call is kept. Failures: `error` (the answer failed), else
`dispute_error` and `judge_error` (the answer stands, unchecked). Model calls: the pattern's, then one per passage
about the question (disputes), one per citation (citations.verify) and the answer check's.
"""
import threading
import time

from layers import answer_check
import assembly
from layers import disputes
import generate
import llm
from lab import partial, steps
from vector_index import CorpusError


class Live:
    def __init__(self, answer, stop=None, corpus=None):
        self.answer, self.stop, self.corpus = answer, stop or threading.Event(), corpus
        self.stage, self.written, self.short, self.steps = "retrieving and answering", [], None, []
        self.result = self.dispute = self.checked = self.error = self.dispute_error = self.judge_error = None
        self.verdicts, self.checks, self.judge = [], [], {}
        self.changed, self.stopped, self._thread = threading.Event(), False, None

    def start(self, question):
        self._thread = threading.Thread(target=self._run, args=(question,), daemon=True)
        self._thread.start()
        return self

    def running(self):
        return self._thread is not None and self._thread.is_alive()

    def join(self):
        if self._thread is not None:
            self._thread.join()

    def _begin(self):  # a pattern may write more than one reply: what is shown is the one being written
        self.written, self.short = [], None

    def _sentence(self, n, text, ids):
        self.written.append((text, ids))
        self.changed.set()

    def _short(self, answer):
        self.short = answer
        self.changed.set()

    def _run(self, question):
        try:
            self._answer(question) and self._check()
        except llm.Stopped:
            self.stopped = True
        finally:
            self.changed.set()

    def _answer(self, question):
        watch = partial.Watcher(self._sentence, self._short, self._begin)
        try:
            with steps.watch() as self.steps, generate.watching(watch), llm.cancelling(self.stop):
                self.result = self.answer(question)  # each step is readable as soon as it is appended
        except llm.Stopped:
            raise
        except Exception as e:  # any failure becomes a message; the caller keeps serving
            self.error = str(e) if isinstance(e, (ValueError, CorpusError, llm.LLMError)) else repr(e)
        return self.result is not None

    def _took(self, what):
        now = time.time()
        self.checks.append((what, now - self._clock))
        self._clock = now

    def _verdict(self, n, v):
        self.verdicts.append(v)
        self.changed.set()
        self._took(f"sentence {n + 1}: {len(v['precise'])} citation{'s' * (len(v['precise']) != 1)} checked")

    def _check(self):
        self._clock = time.time()
        with llm.counting() as self.judge, llm.cancelling(self.stop):
            # the disagreement check first: a side of it that reads like an instruction is quarantined by verify()
            self.stage = "checking whether the sources disagree (one call per passage about the question)"
            try:
                self.dispute = disputes.check(self.result, corpus=self.corpus)
                if self.dispute["disputed"]:   # shown as a choice: each answer, its sources, which is newer
                    self.dispute["sides"] = disputes.sides(self.dispute, self.result["passages"], self.corpus)
                self._took("disagreement check")
            except llm.Stopped:
                raise
            except Exception as e:  # the answer shows without the chip; the caller says why
                self.dispute_error = str(e)
            self.stage = "checking citations (one judge call per citation)"
            self.changed.set()
            try:
                assembly.FULL.verify(self.result, on_verdict=self._verdict, dispute=self.dispute)
                self.stage = "checking the answer itself (the cited passages asked the question)"
                self.checked = answer_check.check(self.result, self.verdicts, self.dispute)
                self._took("answer check")
            except llm.Stopped:
                raise
            except Exception as e:  # the answer still shows, its chips marked unchecked
                self.judge_error, self.verdicts = str(e), None
