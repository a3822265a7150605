"""Helpers and fixtures shared by test modules (no test module imports another; the tiny space is tests/tiny.py)."""
