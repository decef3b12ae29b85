"""Tests of the runtime: confined runs, limits, preview, audit, the escape suite."""
