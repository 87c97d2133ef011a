"""What a run leaves on disk and the rules every driver of runs keeps: the run directory's files (``files.py``),
the verdicts taken before a run (``judged_before.py``), the judge that answers code it has a verdict on instead of
judging it again (``judged_once.py``) and how far past its time budget a run may end (``overrun.py``). The
optimisation graph writes them; the suite and the CLI read them without importing the graph.
What a run is asked (``spec.py``: ``RunSpec``, its ``Budgets``) and what it ended with (``outcome.py``:
``RunOutcome``, its ``summary.json``) are typed here, so every driver of runs reads and writes them alike.
"""
