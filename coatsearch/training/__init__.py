"""Training: the fit loop, step curves, in-memory datasets and their checks, measured throughput, and the compile
and worker choices measured on the machine.
"""
