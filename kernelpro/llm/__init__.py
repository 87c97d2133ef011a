"""Chat models through LiteLLM (models.py), what a refused key looks like (keys.py), and how each model
calls tools (probe.py)."""
