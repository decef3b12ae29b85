"""Stockade: compiler stage."""
