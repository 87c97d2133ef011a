"""What `kernelpro`'s exit status means: the same on every command, documented in docs/reference/exit-codes.md.

A script can tell "worked" from "worked, nothing to gain" from "fix your input" from "try again later" from
"a bug" without reading the output.
"""

from __future__ import annotations

OK = 0
"""The command did its job: a run that found an improvement, verdicts given (whatever they are), a report."""
INTERNAL_ERROR = 1
"""An unexpected exception inside kernelpro: a bug. Its traceback is printed; please report it."""
BAD_INPUT = 2
"""The command line or an input cannot be used: a missing, unreadable or non-KernelBench file, an unknown option,
``--device cuda`` where no GPU is visible. Nothing was run; or, for `optimize`, the reference itself fails when
run (its error line said): no candidate can be judged against it."""
NO_IMPROVEMENT = 3
"""`optimize` ended (every candidate judged, or a budget spent) with no candidate faster than the reference beyond
its interval (under `--objective energy` or `edp`: lower in energy or EDP): keep the reference."""
FAILED = 4
"""The work could not be done here: a run failed (what it judged is kept; ``--resume`` continues it), `doctor`
found something required missing, `profile` measured nothing."""
SETUP_FAILED = 5
"""The run could not be set up on this machine: a dependency that does not import, a judge or a model that
cannot start. Nothing was judged; it is the machine's fault, not the problem's, so a suite stops instead of
failing every problem the same way. Fix it and ``--resume``."""
INTERRUPTED = 130
"""Stopped by the user: Ctrl-C, or `t` (stop) at an interactive prompt. A run can be resumed."""

MEANINGS = {OK: "ok", INTERNAL_ERROR: "internal error (a bug)", BAD_INPUT: "bad input (fix the command or its files)",
            NO_IMPROVEMENT: "no improvement (keep the reference)",
            FAILED: "failed (a run that can be resumed, a missing requirement, nothing measured)",
            SETUP_FAILED: "setup failed (this machine cannot run it; fix it and resume)",
            INTERRUPTED: "interrupted (a run can be resumed)"}
"""Every status above in a few words; `kernelpro --help` lists them from here, so none is left out."""
