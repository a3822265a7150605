"""coatsearch: which arrangement of convolution and attention stages is best at equal compute."""

__version__ = "0.1.0"
