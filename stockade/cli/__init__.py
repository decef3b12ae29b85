"""Stockade: cli stage."""
