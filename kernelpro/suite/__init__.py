"""Many problems in one run: sources, the ledger, baselines, scheduling over GPU lanes or Ray, scores, the report.

Each problem gets a full ``kernelpro optimize`` run in a child process of its own (the same composition root,
graph, policies and judge), so a problem that crashes or hangs is recorded and the suite goes on; the driver
alone writes the ledger.
"""
