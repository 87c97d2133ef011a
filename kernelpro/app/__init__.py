"""The composition root: which concrete judge, policy, profiler, memory, gate and models a run or a chat uses."""
