"""Contracts and shared helpers every stage uses; imports no stage."""
