"""Reading a study (no rendering): the tables, the papers' measures and claims, paired statistics, verdicts, their
calibration, the registered analysis, earlier looks, Pareto fronts, what a search found.
"""
