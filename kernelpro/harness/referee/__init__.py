"""The referee: a correct verdict decided again in processes the candidate never runs in."""
