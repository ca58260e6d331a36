"""The layers: what the lab adds on top of the week steps, one idea per module (assembly.py puts them in order)."""
