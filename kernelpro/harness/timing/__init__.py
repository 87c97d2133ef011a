"""Timing: the clocks, the alternating rounds, the speedup's interval, energy, the KernelBench scorecard, and the
second opinion's independent method."""
