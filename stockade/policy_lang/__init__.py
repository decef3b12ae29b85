"""Stockade: policy_lang stage."""
