"""The package version, below every stage (the store records it in each run's environment)."""

__version__ = "0.1.0"
