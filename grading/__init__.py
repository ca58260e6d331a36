"""The instructors' tools: a student's hand-in (handin.py, `make handin`), its grading against rubric.json
(grade.py, with checks.py, figures.py, reference.py, claims.py and rerun.py), and replay.py, which re-makes a
committed result from the cache with the model refused. Each runs from the repository's top folder as
`python -m grading.NAME`. Nothing at the top level imports them.
"""
