"""Copies debian/docs/: real manuals no one on the project wrote, the HTML of Debian's debian-policy package (the
Debian Policy Manual's 12 chapters and 10 appendices, its upgrading checklist, and five sub-policies and
specifications shipped beside it), a second evaluation set built differently from the made-up catalogue. The files
are copied byte for byte: the lab's reader (lab/documents.py) drops Sphinx's sidebar and menus itself. Beside them
go the package's copyright file and the manual's reStructuredText sources (debian/sources/, not indexed), which the
manual's GPL asks to pass on with the HTML. The questions (debian/golden.json) are written by hand, not by this
script. The output is committed, so a clone needs neither this script nor the package.

    apt-get install debian-policy                      # once (Debian 12 ships 4.6.2.0)
    python -m experiments.make_debian                  # <1 s: rewrites debian/docs/, sources/ and copyright
    python -m experiments.make_debian --out /tmp/deb   # the same files elsewhere
    python vector_index.py --corpus debian/docs        # index them: 973 chunks

Expected output:
    debian/docs: 28 documents copied from debian-policy 4.6.2.0 (1,170,079 bytes of HTML)

Not handled: other versions of the package (their files are copied the same way, but golden.json was checked
against 4.6.2.0 and its answers may move), the multi-page menu-policy and perl-policy (their one-page versions,
menu-policy-1.html and perl-policy-1.html, are copied), the PDF, text and EPUB editions, the FHS.
"""
import argparse
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "debian"
PACKAGE = "debian-policy"
CHECKED = "4.6.2.0"      # the version debian/golden.json was written against
SOURCE = Path("/usr/share/doc/debian-policy")
MANUAL = "policy.html"   # the Policy Manual, one HTML file per chapter or appendix (Sphinx)
# the one-page documents beside the manual; its index.html (a table of contents), genindex.html and search.html
# are left out: they hold no text of their own
EXTRA = ("policy.html/upgrading-checklist.html", "copyright-format-1.0.html", "debconf_specification.html",
         "autopkgtest.html", "menu-policy-1.html", "perl-policy-1.html")
COPYRIGHT = "copyright"   # the package's licence file (GPL-2+ for the manual), kept beside docs/, not in it
SOURCES = "policy.html/_sources"   # the manual's reStructuredText sources, which its GPL asks to pass on with the HTML


def package_version(package=PACKAGE):
    """The installed version of a Debian package, or None: 'debian-policy' -> '4.6.2.0'."""
    try:
        run = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    except OSError:
        return None
    return (run.stdout.strip() or None) if run.returncode == 0 else None


def chosen(source=SOURCE):
    """The files to copy, in order: the manual's chapters (ch-*.html) and appendices (ap-*.html), then EXTRA."""
    manual = sorted((source / MANUAL).glob("ch-*.html")) + sorted((source / MANUAL).glob("ap-*.html"))
    return manual + [source / name for name in EXTRA]


def copy(files, folder):
    """Copies each file into folder/ (emptied first) under its own name; -> bytes copied."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for f in files:
        shutil.copyfile(f, folder / f.name)
    return sum(f.stat().st_size for f in files)


def main():
    ap = argparse.ArgumentParser(description="Copy debian/docs/: the HTML of the installed debian-policy package "
                                             "(real manuals, GPL-2+), the lab's corpus of real documents.")
    ap.add_argument("--source", type=Path, default=SOURCE, help=f"the package's documentation (default: {SOURCE})")
    ap.add_argument("--out", type=Path, default=OUT, help="the folder to write docs/, sources/ and copyright "
                                                          "into (default: debian/)")
    args = ap.parse_args()
    files = chosen(args.source)
    missing = [f for f in files if not f.is_file()] if len(files) > len(EXTRA) else [args.source / MANUAL]
    if missing:
        sys.exit(f"make_debian: {missing[0]} is missing, is {PACKAGE} installed? run `apt-get install {PACKAGE}`")
    size = copy(files, args.out / "docs")
    shutil.copyfile(args.source / COPYRIGHT, args.out / COPYRIGHT)
    copy(sorted((args.source / SOURCES).glob("*.rst.txt")), args.out / "sources")   # not indexed: outside docs/
    shown = args.out.resolve().relative_to(ROOT) if args.out.resolve().is_relative_to(ROOT) else args.out
    version = package_version()
    print(f"{shown / 'docs'}: {len(files)} documents copied from {PACKAGE} {version or '(version unknown)'}"
          f" ({size:,} bytes of HTML)")
    if version != CHECKED:
        print(f"note: debian/golden.json was checked against {PACKAGE} {CHECKED}; run "
              f"`python -m pytest tests/test_debian.py` to see which answers moved")


if __name__ == "__main__":
    main()
