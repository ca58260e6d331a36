"""Steps as they happen: every pattern keeps its trace in a `Trace`, and whoever watches the thread that
runs the pattern (the demo page) sees each step the moment it is appended, long before the answer is done.

    with steps.watch() as seen:          # in the thread that answers
        multihop.smart_answer(question)  # meanwhile another thread reads `seen`: route, retrieve, ...

A Trace is a plain list to everything else (==, json, slicing); only append() also tells the watcher.
Steps are dicts, so a step updated after it was appended (a retrieval retried deeper) shows updated.
"""
import contextlib
import threading

_WATCH = threading.local()


class Trace(list):
    """A pattern's trace: a list whose append() also publishes the step to this thread's watcher, if any."""

    def append(self, step):
        super().append(step)
        seen = getattr(_WATCH, "seen", None)
        if seen is not None and seen is not self:
            seen.append(step)


def trace(steps=None):
    """The trace a pattern appends to: the caller's (steps, when given) or a new one."""
    return steps if steps is not None else Trace()


@contextlib.contextmanager
def watch():
    """with watch() as seen: every step appended to any Trace in this thread meanwhile lands in `seen`,
    in order (a plain list: read it from another thread while this one works)."""
    previous, _WATCH.seen = getattr(_WATCH, "seen", None), []
    try:
        yield _WATCH.seen
    finally:
        _WATCH.seen = previous
