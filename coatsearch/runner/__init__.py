"""Running a study: one trial for any engine, interrupts, the Optuna and Ray backends, and trained weights of found
architectures.
"""
