"""Stockade: runtime stage."""
