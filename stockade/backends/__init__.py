"""Stockade: backends stage."""
