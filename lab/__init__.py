"""The lab's plumbing, beneath the week scripts: nothing here imports a week's file.

    answers.py   comparing answers without a model (SQuAD EM/F1, matching, fuller forms)
    cache.py     the disk cache every script shares and its one key rule; `python -m lab.cache` lists stale entries
    engine.py    the plumbing of llm.py's embedded engine: the bundled weights, the Ollama API it answers
    links.py     what a passage names, and the `chain` ranking behind `retrieve.py --method chain`
    native.py    llama.cpp compiled for this CPU: `python -m lab.native --build` (`make native`)
    steps.py     a pattern's trace as it happens, and the result every pattern returns
"""
