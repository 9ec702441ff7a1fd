"""Reliability and security suite (issue 9): fault matrix, load, fuzzing, hostile servers,
secrets."""
