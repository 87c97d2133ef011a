"""kernelpro: a multi-agent system that makes GPU kernels faster, judged by a harness that cannot be fooled."""

__version__ = "0.1.0"
