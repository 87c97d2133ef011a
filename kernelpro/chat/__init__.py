"""``kernelpro chat``: a tool-calling agent over the catalogue, one conversation about one kernel."""
