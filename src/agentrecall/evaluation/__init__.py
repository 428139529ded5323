"""Recall benchmarks that run on any memory store."""
