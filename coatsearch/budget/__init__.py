"""Counting and matching: MACs and params of a model, the budget solve (alone and joint), a candidate prepared as a
matched model, and which sampled points are admissible.
"""
