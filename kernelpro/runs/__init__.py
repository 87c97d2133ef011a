"""What a run leaves on disk and the rules every driver of runs keeps: the run directory's files (``files.py``),
the verdicts taken before a run (``judged_before.py``) and how far past its time budget a run may end
(``overrun.py``). The optimisation graph writes them; the suite and the CLI read them without importing the graph.
"""
