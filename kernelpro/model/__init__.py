"""`kernelpro model`: a real model's hot regions found (profile, regions), written as problems (extract), optimised
as a suite (suite_child), spliced back (splice, splice_runtime) and judged end to end (verify, finish, report)."""
