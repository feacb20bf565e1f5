"""Drafter implementations (the registry of kinds is actors/drafter_kinds/)."""
