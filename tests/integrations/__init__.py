"""Tests of the agent integrations: hooks, exports, imports, the library API."""
