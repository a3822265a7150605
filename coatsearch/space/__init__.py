"""A space file, loaded: its schema (the file's sections, validated into the vocabulary's specs), the loader (safe
YAML, profiles, errors with file:line and field path), the frozen Space of candidates, and the search over it
(which points a search dimension holds, and which sampled points are admissible).
"""
