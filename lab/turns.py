"""Whose turn it is at the one engine: questions answered one at a time, first come first served, each waiting one
knowing its place, and each one stoppable by the page that asked it (app.py).

    line = Turns()
    turn = line.join("page-1")           # a Turn: its place, and the Event a Stop sets
    while (ahead := line.wait(turn, 0.5)):   # the number ahead of it; 0 once it is its turn
        print(f"queued, {ahead} ahead")
    ...answer, with llm.cancelling(turn.stop)...
    line.leave(turn)                     # always (try/finally): the next one's turn

line.stop("page-1") sets the Event of every turn that page has in the line, running or waiting. No model call.
"""
import threading


class Turn:
    """One question in the line: whose it is, and the Event its page's Stop sets."""
    def __init__(self, who):
        self.who, self.stop = who, threading.Event()


class Turns:
    def __init__(self):
        self._changed, self._line = threading.Condition(), []   # the first in the line is the one answering

    def join(self, who):
        turn = Turn(who)
        with self._changed:
            self._line.append(turn)
        return turn

    def wait(self, turn, timeout):
        """Wait up to `timeout` s for this turn to come, or for it to be stopped; -> the number still ahead of it."""
        with self._changed:
            self._changed.wait_for(lambda: self._line.index(turn) == 0 or turn.stop.is_set(), timeout)
            return self._line.index(turn)

    def leave(self, turn):
        with self._changed:
            if turn in self._line:
                self._line.remove(turn)
            self._changed.notify_all()

    def stop(self, who):
        """Stop every turn `who` has in the line; -> how many."""
        with self._changed:
            mine = [t for t in self._line if t.who == who]
            for t in mine:
                t.stop.set()
            self._changed.notify_all()
            return len(mine)

    def __len__(self):
        with self._changed:
            return len(self._line)

