"""The worker: its process (a fresh one per job, or a long-lived one per device), what the judge holds of it, its own
directories, and the evaluation that runs inside it."""
