"""The command line the experiments' probes share: --limit N golden questions (at least 1), --golden when the probe
takes another file, and --json for the rows and figures.

    args = probe_cli.parse("spec_probe", "What the probe measures.", limit=12)
"""
import argparse
import sys
from pathlib import Path

QUESTIONS = "golden questions (half single, half multi)"


def parse(prog, description, limit, limit_help=QUESTIONS, golden=None, extra=()):
    """The probe's flags, parsed; a --limit under 1 exits with one line naming the probe. golden: the default of a
    --golden flag (None: no such flag); extra: (flag, keyword arguments) pairs added first."""
    ap = argparse.ArgumentParser(description=description)
    for flag, kw in extra:
        ap.add_argument(flag, **kw)
    ap.add_argument("--limit", type=int, default=limit, help=limit_help)
    if golden is not None:
        ap.add_argument("--golden", type=Path, default=golden, help="golden questions")
    ap.add_argument("--json", type=Path, help="write the rows and figures here")
    args = ap.parse_args()
    if args.limit < 1:
        sys.exit(f"{prog}: --limit must be at least 1")
    return args
