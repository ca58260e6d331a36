"""The committed tables (grading/tables.py) and their replay (grading/replay.py --all): offline, no model.

A table's figures come from today's code when every cache entry its replay read is current: present in the committed
snapshot and keyed by its module's code today. The toy table below shows the mechanism end to end; the last test holds
the real registry to it.
"""
import json

import pytest

from grading import replay, tables
from lab.cache import Cache, Key, code_key, keyed

TOY = '''
import argparse, json
from lab.cache import Cache, keyed
ap = argparse.ArgumentParser()
ap.add_argument("--json")
args = ap.parse_args()
value = Cache.shared("toy").get(keyed("golden", "toy question"))
if value is None:
    import llm
    try:
        value = llm.complete("toy question")   # a miss asks the model, which a replay refuses
    except llm.LLMError as e:
        raise SystemExit(f"toy: {e}")
open(args.json, "w").write(json.dumps({"answer": value, "seconds": 1.5}))
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A snapshot folder holding one current entry, a script that reads it, and its committed table."""
    snapshot = tmp_path / "snapshot"
    Cache("toy", snapshot).put(keyed("golden", "toy question"), "Hartmoor")
    script = tmp_path / "toy.py"
    script.write_text(TOY, encoding="utf-8")
    committed = tmp_path / "toy.json"
    committed.write_text(json.dumps({"answer": "Hartmoor", "seconds": 9.0}), encoding="utf-8")
    monkeypatch.setattr(tables, "KEYS", tmp_path / "keys")
    return snapshot, tables.Table(str(committed), str(script))


def test_a_table_replays_from_the_snapshot_and_its_keys_are_kept(toy, capsys):
    snapshot, table = toy
    before = (snapshot / "toy.jsonl").read_text()
    assert replay.replay_all(record=True, snapshot=snapshot, chosen=[table]) == 0
    line = capsys.readouterr().out
    assert "refused 0  fields 1  differ 0" in line   # seconds are not compared
    assert tables.keys_of(table) == {"toy": [keyed("golden", "toy question")]}
    assert (snapshot / "toy.jsonl").read_text() == before   # the snapshot itself is never written
    assert tables.stale_keys(table, snapshot) == []


def test_an_entry_made_by_older_code_or_missing_is_stale(toy):
    snapshot, table = toy
    replay.replay_all(record=True, snapshot=snapshot, chosen=[table])
    (key,) = tables.keys_of(table)["toy"]
    old = Key(Cache.key("older code", "r"), "golden", "r")   # as golden's code keyed it before an edit
    table.keys_file.write_text(json.dumps({"keys": {"toy": [key, old, "0" * 64]}}))
    Cache("toy", snapshot).put(old, "Hartmoor")
    tables._meta.cache_clear()
    assert [why for _, _, why in tables.stale_keys(table, snapshot)] == ["made by older code of golden",
                                                                          "not in the snapshot"]


def test_a_table_that_reads_no_cache_is_stale_when_its_scripts_code_changes(tmp_path, monkeypatch):
    monkeypatch.setattr(tables, "KEYS", tmp_path)
    table = tables.Table("results/retrieval.json", "retrieve.py --eval")
    assert table.module == "retrieve" and tables.Table("r.json", "-m experiments.chain_eval").module == \
        "experiments.chain_eval"
    table.keys_file.write_text(json.dumps({"code": {"retrieve": code_key("retrieve")}, "keys": {}}))
    assert tables.stale_keys(table) == []
    table.keys_file.write_text(json.dumps({"code": {"retrieve": "0" * 16}, "keys": {}}))
    assert tables.stale_keys(table) == [("code", "retrieve", "made by older code of retrieve")]


def test_a_miss_is_a_refused_call_and_no_keys_are_kept(toy, capsys):
    snapshot, table = toy
    (snapshot / "toy.jsonl").write_text("")
    assert replay.replay_all(record=True, snapshot=snapshot, chosen=[table]) == 1
    assert "refused 1" in capsys.readouterr().out and not table.keys_file.exists()


def test_a_table_that_cannot_be_remade_names_its_commit(capsys):
    frozen = tables.Table("results/x.json", "benchmark.py", made_at="abc1234")
    assert replay.replay_all(chosen=[frozen]) == 0
    assert "not replayable from today's code: made at abc1234" in capsys.readouterr().out


def test_make_runs_a_tables_command_and_writes_its_file(tmp_path, monkeypatch, capsys):
    script, out = tmp_path / "writes.py", tmp_path / "made.json"
    script.write_text("import sys, json\n"
                      "open(sys.argv[sys.argv.index('--json') + 1], 'w').write(json.dumps({'n': 3}))\n")
    monkeypatch.setattr(tables, "TABLES", [tables.Table(str(out), str(script))])
    assert replay.make(["made"]) == 0 and json.loads(out.read_text()) == {"n": 3}
    assert f"## {script} --json {out}" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown table 'nope'"):
        replay.make(["nope"])


SETUP = '''
import sys
from lab.cache import Cache, keyed
if Cache.shared("toy").get(keyed("golden", "the graph")) is None:
    sys.exit("setup: no graph in the cache")
'''


def test_a_tables_setup_runs_first_and_what_it_reads_is_kept(toy, tmp_path, capsys):
    snapshot, table = toy
    setup = tmp_path / "setup.py"
    setup.write_text(SETUP, encoding="utf-8")
    with_setup = tables.Table(table.file, table.command, setup=str(setup))
    assert replay.replay_all(record=True, snapshot=snapshot, chosen=[with_setup]) == 1   # its entry is missing
    assert "(setup failed)" in capsys.readouterr().out and not with_setup.keys_file.exists()
    Cache("toy", snapshot).put(keyed("golden", "the graph"), {"nodes": 3})
    assert replay.replay_all(record=True, snapshot=snapshot, chosen=[with_setup]) == 0
    assert tables.keys_of(with_setup) == {"toy": sorted([keyed("golden", "toy question"),
                                                         keyed("golden", "the graph")])}


def test_make_runs_a_tables_setup_before_its_command_and_stops_when_it_fails(tmp_path, monkeypatch, capsys):
    script, out = tmp_path / "writes.py", tmp_path / "made.json"
    script.write_text("import sys, json\n"
                      "open(sys.argv[sys.argv.index('--json') + 1], 'w').write(json.dumps({'n': 3}))\n")
    fails = tmp_path / "fails.py"
    fails.write_text("raise SystemExit(1)\n")
    monkeypatch.setattr(tables, "TABLES", [tables.Table(str(out), str(script), setup=str(fails))])
    assert replay.make(["made"]) == 1 and not out.exists()
    setup = f"{script} --json {tmp_path / 'setup.json'}"
    monkeypatch.setattr(tables, "TABLES", [tables.Table(str(out), str(script), setup=setup)])
    assert replay.make(["made"]) == 0 and json.loads(out.read_text()) == {"n": 3}
    printed = capsys.readouterr().out
    assert printed.index(f"## {setup}") < printed.index(f"## {script} --json {out}")


def test_the_snapshot_keeps_what_the_tables_read_and_drops_the_rest(toy, tmp_path, monkeypatch):
    snapshot, table = toy
    replay.replay_all(record=True, snapshot=snapshot, chosen=[table])
    Cache("toy", snapshot).put(keyed("golden", "another question"), "unread")
    Cache("other", snapshot).put("k", "no table reads this cache")
    monkeypatch.setattr(tables, "TABLES", [table])
    written, missing = tables.write_snapshot([tmp_path / "empty", snapshot], snapshot)
    assert written == {"toy": 1} and missing == [] and not (snapshot / "other.jsonl").exists()
    assert Cache("toy", snapshot).data == {keyed("golden", "toy question"): "Hartmoor"}
    assert replay.replay_all(snapshot=snapshot, chosen=[table]) == 0   # and it still replays
    table.keys_file.write_text(json.dumps({"keys": {"toy": [keyed("golden", "toy question"), "0" * 64]}}))
    assert tables.write_snapshot([snapshot], snapshot) == ({}, [("toy", "0" * 64)])
    assert Cache("toy", snapshot).data == {keyed("golden", "toy question"): "Hartmoor"}   # left as it was


def test_what_a_replay_computes_itself_is_not_recorded_as_read(toy):
    snapshot, table = toy
    with replay.reading(snapshot) as read:
        store = Cache.shared("toy")
        store.put("computed", 1)
        assert store.get("computed") == 1 and store.get(keyed("golden", "toy question")) == "Hartmoor"
    assert read == {"toy": {keyed("golden", "toy question")}}


@pytest.mark.parametrize("table", tables.TABLES, ids=lambda t: t.name)
def test_every_committed_table_comes_from_todays_code(table):
    """Every cache entry its replay read is current: an edit that changes what a quoted table depends on fails here
    until the table is made again (or its page names the commit that made it)."""
    if table.made_at:
        return
    assert table.keys_file.exists(), f"{table.file}: never recorded: python -m grading.replay --all --record"
    assert tables.stale_keys(table) == []
