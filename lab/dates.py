"""The date a document gives itself: 'Last updated: 3 March 2024', 'Effective from 2023-09-01', 'Revised
January 2022'. A dispute between two pages shows which one is newer when they say so (disputes.sides). No model.

    stated_date('Fees (last updated 3 March 2024)')   -> datetime.date(2024, 3, 3)
    stated_date('The tower was built in 1756.')       -> None   (a date in a fact, not the page's own)

Only a date after a word that dates the text itself counts (updated, revised, effective, as of, published,
dated, reviewed, amended, last modified, version of); a bare year in a sentence is a fact about the world. A
month or year alone is read as its first day. python-dateutil reads the date's many spellings.
"""
import re
from datetime import date, datetime

from dateutil import parser

MARKER = re.compile(r"\b(?:last\s+)?(?:updated|revised|effective(?:\s+from|\s+as\s+of)?|as\s+of|published|dated|"
                    r"reviewed|amended|modified|version\s+of)\b[\s:,-]*(?:on\s+|from\s+|in\s+)?", re.I)
DATE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{4}|"
                  r"(?:\d{1,2}(?:st|nd|rd|th)?\s+)?(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
                  r"(?:\s+\d{1,2}(?:st|nd|rd|th)?,?)?\s+\d{4}|(?:19|20)\d\d\b", re.I)
FIRST = datetime(2000, 1, 1)   # what a missing month or day is read as


def stated_dates(text):
    """Every date the text gives itself (after a marker word), in order."""
    out = []
    for m in MARKER.finditer(text or ""):
        d = DATE.match(text, m.end())
        if not d:
            continue
        try:
            out.append(parser.parse(d.group(), default=FIRST).date())
        except (ValueError, OverflowError):
            continue
    return [d for d in out if d.year >= 1900]


def stated_date(text):
    """The latest date the text gives itself, or None."""
    found = stated_dates(text)
    return max(found) if found else None


def shown(d):
    """A date as the page and the CLI print it: '2024-03-03'."""
    return d.isoformat() if isinstance(d, date) else ""
