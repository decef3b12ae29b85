"""Stockade: analyzer stage."""
