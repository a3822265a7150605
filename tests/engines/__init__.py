"""The engine-contract suite: one set of tests run over every backend (optuna, ray)."""
