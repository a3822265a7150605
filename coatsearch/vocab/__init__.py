"""The vocabulary every stage speaks: the frozen specs, the kind registries (stage and stem kinds) and validated
numbers. No torch.
"""
