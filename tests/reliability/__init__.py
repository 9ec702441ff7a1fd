"""Reliability and security suite: fault matrix, load, fuzzing, hostile servers,
secrets."""
