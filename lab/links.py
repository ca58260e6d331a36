"""What a passage names, and the `chain` retrieval that follows it: multi-hop retrieval with no model call.

HotpotQA and MuSiQue were built along Wikipedia's links, so the passage that answers hop 1 usually names
the document of hop 2: by its title ("... the Namib, whose capital is Windhoek" -> the "Windhoek" page), or
by a name the two passages share (hop 1 says "Daniel Alfredson", hop 2 is a film "directed by Daniel
Alfredson"). `chain` (retrieve.py's `method="chain"`) walks one such step:

1. hop 1: the question's fused list (dense + BM25, reciprocal rank fusion, one chunk per document);
2. links: from each of the top CHAIN_SEEDS passages (and the SEED_CHUNKS - 1 other chunks of its document most
   relevant to the question: a page's bridge, its prerequisite's code or its room, is often in another section
   than the one hop 1 found), the chunks of every document whose title it names (`ngram_keys`, the titles
   extractor graph_index.py uses; a code in a title names its document too: 'passed BIO 214' names the page
   titled 'BIO 214 Microbial Diversity', and so does what follows a title's colon: 'taught by Dr Wren Albescu'
   names 'Curriculum Vitae: Dr Wren Albescu') and every chunk that shares a rare name with it (`names`: runs of
   capitalised words on one line, and codes such as 'BIO 214', 'MAR/2140', 'C-12'; "rare": in at most MAX_LINK_DF
   chunks and MAX_LINK_DOCS of the documents, so what a template repeats on every page is no link; not a table's
   header row; not already in the question, which hop 1 has covered, nor holding a code the question says);
3. one score for every candidate, hop-1 ones and reached ones alike:
   relevance to the question (cosine + BM25_WEIGHT * BM25 / best BM25) plus, for a reached chunk, the
   link's bonus (TITLE_BONUS for a named title, NAME_BONUS * idf share ** IDF_POWER for a shared name, CODE_BONUS
   instead of NAME_BONUS for a shared code) times the seed's relevance relative to the top seed. So a linked chunk
   must still be about the question, and a single-hop question whose top passages link nowhere useful keeps its
   fused ranking;
4. the top hop-1 passage stays first, then each document by its best chunk's score; a document cut at headings or
   pages that a link reached is shown by a chunk the link reached (LINKED_CHUNK: the buildings guide's page that
   holds 'MRK 305', not its first page, which is the most like "In which building ..."), and the link's source,
   when it is another chunk of the seed's document (the Contact table that says 'MRK 305'), is shown before it
   (SHOW_BRIDGE), in the place of the last document: without it no passage shown says whose office that is;
5. a document reached through a link and cut at its headings or pages is then shown by another chunk: the one most
   relevant to what the question still asks (`rest_of`: its words less those the linking sentence and the source
   chunk's headings say, `said_by`), plus WHOLE_SHARE times relevance to the whole question. The whole question
   repeats hop 1's relation ("the prerequisite of"), so by it alone hop 2 showed AST 210's Prerequisites, not who
   teaches it. A shared name's document is shown by one of the chunks that hold the name. Documents and their order
   do not change, only the chunk shown.
Each reached passage records `via`: the seed it was reached from and the title or name that links them.

The constants were chosen on the dev half of golden.json (`split_of`) and reported on the test half:
results/chain_dev.json; CHAIN_SEEDS, SEED_CHUNKS, TITLE_BONUS, MAX_LINK_DOCS and IDF_POWER on the dev halves of
golden.json and catalogue/golden.json together (results/issue45/chain.txt); WHOLE_SHARE, REST_BM25 and STEM_CHARS on
their dev halves by answer-bearing recall (results/issue45/hop2.txt); CODE_BONUS, LINKED_CHUNK, SHOW_BRIDGE and
TITLE_AFTER_COLON on the catalogue's dev half by whether every hop's answer is in a passage of that hop's document
(results/issue45/bridge.txt; golden.json's figures do not move). Names are cached per chunk text
(.rag/cache/links.jsonl): an index update recomputes only new or changed chunks; titles are read from the index's
metadata at load, so an added or renamed document is linked at once.
Not handled: aliases ("JFK" for "John F. Kennedy"), lower-case names and codes ('room g12'), codes with no capital
prefix ('2140'), a PDF table's header row (its text layer has no cell separators: the document-frequency rule is
what keeps its headers from linking), more than one step per call (three- and four-hop questions get one step); a
synonym of the linking sentence's words ('lecturer' for 'instructor') left in the rest of a question; two chunks of
one reached document; a seed's bridge in a chunk other than the seed's and its most relevant one ('In which building
is HSC 230 taught?' finds its Instructor section, and its room is under Schedule).
"""
import math
import re
import unicodedata
from collections import defaultdict

from lab.cache import Cache, keyed

CHAIN_SEEDS = 1             # hop-1 passages whose links are followed (2 before issue 45: a second seed's links were
                            # mostly noise on the catalogue, and no better on golden.json's dev half)
SEED_CHUNKS = 2             # from each, the links of this many chunks of its document (itself, then the most relevant)
CHAIN_DEPTH = 30            # candidates taken from each retriever for hop 1
BM25_WEIGHT = 0.5           # relevance = cosine + BM25_WEIGHT * bm25 / best bm25 of the query
TITLE_BONUS = 0.4           # a seed names the candidate's title (or a code in it)
NAME_BONUS = 0.2            # times (log(N/df)/log(N)) ** IDF_POWER of the rarest name a seed and the candidate share
                            # (N, df: documents)
CODE_BONUS = 0.8            # the same for a shared code ('ARL 212'): an identifier names one thing, as a title does
TITLE_AFTER_COLON = True    # a title's part after its colon is a title too
LINKED_CHUNK = True         # a reached document cut at headings or pages is shown by a chunk the link reached
SHOW_BRIDGE = True          # a reached document's link source, when another chunk of the seed's document, is shown too
IDF_POWER = 2               # squared: a rare code outweighs a department's name
MAX_LINK_DF = 200           # a name in more chunks than this links nothing ("United States")
MAX_LINK_DOCS = 0.1         # nor one in more than this share of the documents: what a template says on every page
MIN_LINK_DOCS = 3           # (a name in this many documents may link in any folder, however small)
MAX_TITLE_WORDS = 8         # longest name looked up as a word n-gram in a question or text
MIN_KEY_CHARS = 3           # shorter normalized names never match inside a question or text
HEADING_WORDS = 8           # a line this short with no sentence end is a heading (said_by)
WHOLE_SHARE = 1.0           # a reached document's chunk: relevance to the rest of the question + this * to the whole
REST_BM25 = 2.0             # relevance to the rest: cosine + REST_BM25 * bm25 / best bm25
REST_RANK = 0.25            # a reached document's score adds this * its best chunk's relevance to the rest
REST_DOCS = 8               # (for the best-scored this many reached documents)
STEM_CHARS = 5              # words agreeing on this many first letters cover each other (rest_of)
_FUNCTION = {"who", "whom", "whose", "what", "which", "where", "when", "why", "how", "is", "are", "was", "were", "do",
             "does", "did", "the", "a", "an", "of", "in", "on", "at", "to", "for", "by", "with", "and", "or", "that",
             "this", "it", "its", "from", "as", "be", "been", "has", "have", "had"}
_CONNECT = {"of", "the", "de", "du", "von", "van", "der", "la", "le", "and", "y", "da", "di", "del"}
_OPENERS = set("The A An In On At It He She They This That These Those His Her Its Their There When While After "
               "Before During From For With By As If But And Or Not No However".split())
_TOKEN = re.compile(r"[^\W_][\w'\u2019\-]*|[^\w\s]")
# a capital prefix (2-6 capitals before a space or '/', or 1-6 joined by '-', '.' or nothing), then a part that
# holds a digit, optionally after one capital: 'HAL 104', 'MAR/2140', 'C-12', 'OSL G12', 'B12'
CODE = re.compile(r"(?<![\w/.-])(?:[A-Z]{2,6}[ /]|[A-Z]{1,6}[-.]?)[A-Z]?\d[\dA-Za-z]*(?![\w/-])")
RULE = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?")


def normalize(name):
    """The merge key of a name: "The  Ashford-Bridge's" -> 'ashford bridge'; 'Édric Vell.' -> 'edric vell'."""
    s = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode().lower()
    s = re.sub(r"['\u2019]s\b", "", s)
    s = " ".join(re.sub(r"[^a-z0-9]+", " ", s).split())
    return s[4:] if s.startswith("the ") else s


def ngram_keys(text, keys):
    """Normalized word n-grams of text that are keys, longest first, none inside a longer one found.
    ('Who designed Ashford Bridge?', {'ashford bridge', 'bridge'}) -> ['ashford bridge']"""
    words, found = normalize(text).split(), []
    spans = sorted(((i, n) for n in range(min(MAX_TITLE_WORDS, len(words)), 0, -1) for i in range(len(words) - n + 1)),
                   key=lambda s: -s[1])
    taken = set()
    for i, n in spans:
        key = " ".join(words[i:i + n])
        if key in keys and len(key) >= MIN_KEY_CHARS and not taken & set(range(i, i + n)):
            taken |= set(range(i, i + n))
            found.append(key)
    return list(dict.fromkeys(found))


def names(text):
    """Normalized names of a text: runs of capitalised words (joined by 'of', 'de', ...), a sentence's opener
    dropped, and codes (`codes`). A run never crosses a line break, and a table's header row names nothing:
    its cells ('Day | Time | Room') are what every such table says, not what this one is about.
    'In 1968, Viorst signed the Writers and Editors War Tax Protest.'
    -> ['viorst', 'writers and editors war tax protest']"""
    keys = set()
    for line in body_lines(text):
        runs, cur = [], []
        for t in _TOKEN.findall(line) + ["."]:
            if t[0].isupper() or (cur and (t[0].isdigit() or t in _CONNECT)):
                cur.append(t)
                continue
            while cur and cur[-1] in _CONNECT:
                cur.pop()
            if cur:
                runs.append(cur[1:] if cur[0] in _OPENERS else cur)
            cur = []
        keys |= {normalize(" ".join(r)) for r in runs if any(t[0].isupper() for t in r)} | set(codes(line))
    return sorted(k for k in keys if len(k) >= MIN_KEY_CHARS)


def codes(text):
    """Identifiers in a text, normalized: a capital prefix and a part with a digit, as course codes, rooms and
    reference numbers are written: 'BIO 214', 'MAR/2140', 'C-12', 'OSL G12', 'B12' -> 'bio 214', 'mar 2140', 'c 12',
    'osl g12', 'b12'. A code is a key of its own, also inside a longer name ('BIO 214 Microbial Diversity'), so a
    page that says only the code links to the page titled with it. A lone capital before a space is not a prefix
    ('A 5-star'), nor is a number alone ('2026-27', '30 credits')."""
    return [normalize(m.group()) for m in CODE.finditer(text)]


def body_lines(text):
    """The lines of a text whose names count: a table's header row dropped (the first of two or more lines of cells
    joined by '|', and a Markdown table's '|---|' line). 'Day | Time\nMonday | 9:00' -> ['Monday | 9:00']"""
    lines, out = text.splitlines(), []
    cells = [line.count("|") >= 1 for line in lines]
    for n, line in enumerate(lines):
        header = cells[n] and (n == 0 or not cells[n - 1]) and n + 1 < len(lines) and cells[n + 1]
        if not header and not RULE.fullmatch(line.strip()):
            out.append(line)
    return out


def describe(via):
    """How a chain passage was reached, in words: "reached from S1 via 'windhoek' (its title)"."""
    return (f"reached from {via['from']} via {via['name']!r} "
            f"({'its title' if via['kind'] == 'title' else 'a shared name'})")


class Links:
    """The link structure of one collection: each chunk's names (cached per text), the chunks holding each
    name, and the chunks of each normalized title."""

    def __init__(self, texts, metas, cache=None):
        cache = cache if cache is not None else Cache("links")
        keys = [keyed("lab.links", "names", t) for t in texts]
        new = {k: names(t) for k, t in zip(keys, texts) if k not in cache}
        cache.put_many(new.items())
        self.names = [new[k] if k in new else cache.get(k) for k in keys]
        self.by_name, self.by_title = defaultdict(list), defaultdict(list)
        for i, ns in enumerate(self.names):
            for n in ns:
                self.by_name[n].append(i)
        for i, m in enumerate(metas):
            # a title's codes name its document too: 'BIO 214 Microbial Diversity' is what 'passed BIO 214' means
            # and so does what follows a title's colon: 'Curriculum Vitae: Dr Wren Albescu' is Dr Wren Albescu's page
            named = [normalize(m["title"].split(":", 1)[1])] if TITLE_AFTER_COLON and ":" in m["title"] else []
            for key in dict.fromkeys([normalize(m["title"])] + codes(m["title"]) + [n for n in named if n]):
                self.by_title[key].append(i)
        self.doc = [m["doc"] for m in metas]
        self.chunks_of, self.located = defaultdict(list), defaultdict(bool)
        for i, d in enumerate(self.doc):
            self.chunks_of[d].append(i)
            self.located[d] |= bool(metas[i].get("section") or metas[i].get("page"))  # its chunks are sections or pages
        # document frequency: a titled chunk repeats its title's names, so a long document would count many times
        self.docs_of = {n: len({self.doc[i] for i in ix}) for n, ix in self.by_name.items()}
        self.codes = set().union(*(codes(t) for t in texts)) if texts else set()
        self.n_docs = max(len(set(self.doc)), 2)
        self.computed = len(new)

    def reached(self, i, text, question, asked_codes=()):
        """{chunk: (bonus, kind, name)} of the chunks chunk i links to, other documents only: TITLE_BONUS when i
        names the chunk's title, plus the bonus of the rarest name they share; kind and name say which link
        shows ('title' wins). `question` is normalized: names it already says link nothing, nor do names that hold
        one of its codes (`asked_codes`, normalized): 'hsc 230 natural history collections' when it asks of HSC 230."""
        title, name, n, asked = {}, {}, self.n_docs, f" {question} "
        for key in ngram_keys(text, self.by_title):
            for j in self.by_title[key]:
                if self.doc[j] != self.doc[i]:
                    title[j] = key
        for key in self.names[i]:
            df = self.docs_of[key]
            boilerplate = len(self.by_name[key]) > MAX_LINK_DF or df > max(MAX_LINK_DOCS * n, MIN_LINK_DOCS)
            if boilerplate or f" {key} " in asked or any(f" {c} " in f" {key} " for c in asked_codes):
                continue
            bonus = (CODE_BONUS if key in self.codes else NAME_BONUS) * (math.log(n / df) / math.log(n)) ** IDF_POWER
            for j in self.by_name[key]:
                if self.doc[j] != self.doc[i] and bonus > name.get(j, (0,))[0]:
                    name[j] = (bonus, key)
        out = {}
        for j in set(title) | set(name):
            b, key = name.get(j, (0.0, None))
            out[j] = (b + TITLE_BONUS, "title", title[j]) if j in title else (b, "name", key)
        return out


def said_by(text, key):
    """What a link's source chunk says about the link: the sentences holding the key and the chunk's heading-like
    lines (its title, section names, a table's header: short, no sentence end). ('AST 310 Biosignatures\n
    Prerequisites\nStudents must have passed AST 210 before enrolling. A pass counts.', 'ast 210') -> 'AST 310
    Biosignatures Prerequisites Students must have passed AST 210 before enrolling.'"""
    out = []
    for line in text.splitlines():
        if len(line.split()) <= HEADING_WORDS and not line.rstrip().endswith((".", "!", "?")):
            out.append(line)
            continue
        out += [s for s in re.split(r"(?<=[.!?])\s+", line) if key and f" {key} " in f" {normalize(s)} "]
    return " ".join(out)


def rest_of(question, said):
    """The question's words that `said` (said_by: what hop 1's passage states about the link) does not cover, a word
    covering another when their first STEM_CHARS letters agree ('teaches' ~ 'teaching', not 'taught'); None when no
    content word is left. ('Who teaches the prerequisite of AST 310?', 'Prerequisites ... passed AST 210 ... AST 310')
    -> 'Who teaches the of'. Word-level only: a synonym ('lecturer' for 'instructor') is not seen as covered."""
    stem = lambda w: w.lower()[:STEM_CHARS]
    covered = {stem(w) for w in re.findall(r"\w+", said)}
    kept = [w for w in re.findall(r"\w+", question) if stem(w) not in covered]
    return " ".join(kept) if any(w.lower() not in _FUNCTION for w in kept) else None


def chain_rank(fused, cosine, bm25, links, texts, question, k, rescore=None):
    """The chain method's ranking -> [(chunk, score, via or None)], one chunk per document, fused[0] first.

    fused: [(chunk, rrf score)] hop-1 list; cosine(chunks) -> {chunk: cosine to the question};
    bm25: the question's BM25 score of every chunk (array); rescore(text, chunks) -> {chunk: relevance to text}.
    With rescore, a document reached through a link is shown by its chunk most relevant to what the question still
    asks (rest_of: the question less what the linking passage says), not to the whole question, whose relation hop 1
    has already answered ('Who teaches the prerequisite of AST 310?' reaches AST 210: its Teaching chunk, not its
    Prerequisites), plus WHOLE_SHARE times its relevance to the whole question (only in a document whose chunks
    have a section or page). A reached document's rank adds REST_RANK times its best chunk's relevance to that rest
    (any document)."""
    if not fused:
        return []
    best_bm25 = float(bm25.max()) or 1.0
    seeds = [i for i, _ in fused[:CHAIN_SEEDS]]
    # a seed's document, not only its best chunk, is followed: the fact that bridges (the prerequisite's code, the
    # room) is often in another section of the page hop 1 found ("In which building is X taught?" finds X's
    # description first, its room is under Schedule)
    sources = {s: [c for c in links.chunks_of[links.doc[s]] if c != s] if SEED_CHUNKS > 1 else [] for s in seeds}
    cands = set(i for i, _ in fused).union(*sources.values())
    cos = cosine(sorted(cands))
    rel = {j: cos[j] + BM25_WEIGHT * float(bm25[j]) / best_bm25 for j in cands}
    reached, asked = {}, codes(question)
    for s in seeds:
        reached[s] = {}
        for c in [s] + sorted(sources[s], key=lambda c: -rel[c])[:SEED_CHUNKS - 1]:
            for j, (b, kind, name) in links.reached(c, texts[c], normalize(question), asked).items():
                if b > reached[s].get(j, (-1.0,))[0]:
                    reached[s][j] = (b, kind, name, c)
    extra = set().union(*reached.values()) - cands
    cos.update(cosine(sorted(extra)))
    rel.update({j: cos[j] + BM25_WEIGHT * float(bm25[j]) / best_bm25 for j in extra})
    cands = set(i for i, _ in fused).union(*reached.values())
    top = rel[seeds[0]] or 1.0
    best, linked = {}, {}
    for j in cands:
        via, bonus = None, 0.0
        for s in seeds:
            if j in reached[s]:
                b, kind, name, c = reached[s][j]
                b *= max(rel[s], 0.0) / top
                if b > bonus:
                    bonus, via = b, {"from": c, "kind": kind, "name": name}
        score = rel[j] + bonus
        d = links.doc[j]
        if d not in best or score > best[d][1]:
            best[d] = (j, score, via)
        if via and (d not in linked or score > linked[d][1]):
            linked[d] = (j, score, via)
    for d, (j, score, via) in linked.items():
        # the document ranks by its best chunk, but a page or section the link did not reach is not the one that
        # answers: 'In which building is the office of X' reaches the buildings guide by X's room code, whose page
        # names the building, while its first page ('how rooms are numbered') is the most like the question
        if LINKED_CHUNK and links.located[d]:
            best[d] = (j, max(score, best[d][1]), via)
    if REST_RANK and rescore:
        # what the question still asks ranks the documents a link reached, not only the chunk each shows: 'How many
        # seats does the room where GEO 101 is taught have?' reaches the lecturer's profile by name and the buildings
        # page by the room's code; only the second speaks of seats
        for d, (j, score, via) in sorted(linked.items(), key=lambda t: -t[1][1])[:REST_DOCS]:
            if d != links.doc[seeds[0]] and (rest := rest_of(question, said_by(texts[via["from"]], via["name"]))):
                by = rescore(rest, links.chunks_of[d])
                best[d] = (best[d][0], best[d][1] + REST_RANK * max(by.values()), best[d][2])
    best.pop(links.doc[seeds[0]])  # hop 1's top passage leads, as found (a link back to it adds nothing)
    ranked = sorted(best.values(), key=lambda t: (-t[1], t[0]))[:k - 1]
    for n, (j, score, via) in enumerate(ranked):
        # only a document cut at its headings or pages: the pieces of a prose text cut by length continue each other
        # (a Wikipedia paragraph's), so the one most like the whole question is as good a guess as any
        located = via and rescore and links.located[links.doc[j]]
        rest = located and rest_of(question, said_by(texts[via["from"]], via["name"]))
        if rest:
            chunks = links.chunks_of[links.doc[j]]
            if LINKED_CHUNK and via["kind"] == "name":   # a shared name reaches the chunks that hold it, not the page
                chunks = [c for c in chunks if via["name"] in links.names[c]] or chunks
            by, whole = rescore(rest, chunks), cosine(chunks) if WHOLE_SHARE else {}
            by = {c: by[c] + WHOLE_SHARE * (whole[c] + BM25_WEIGHT * float(bm25[c]) / best_bm25) if whole else by[c]
                  for c in chunks}
            ranked[n] = (max(by, key=lambda c: (by[c], -c)), score, via)
    out = [(seeds[0], rel[seeds[0]], None)]
    for j, score, via in ranked:
        # the link's source, when not hop 1's top chunk, holds the bridge (the Contact table that names the office
        # 'ARL 212' the buildings page is reached by): without it the passages shown never connect the two hops
        c = via and via["from"]
        if SHOW_BRIDGE and c not in (None, seeds[0]) and c not in [o[0] for o in out] and len(out) + 2 <= k:
            out.append((c, rel[c], None))
        out.append((j, score, via))
    out = out[:k]
    return out
