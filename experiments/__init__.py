"""The scripts that measure the lab's own design choices: which judge, which second hop, which detector, how fast.
Each runs from the repository's top folder as `python -m experiments.NAME` (`python -m experiments.judge_eval
--help`); its docstring gives the command that made its committed figures in results/. Nothing at the top level
imports them: the week scripts do not depend on how their choices were measured.
"""
