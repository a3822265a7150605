"""The verdict rule's lab: simulated studies of the shipped profiles (simulate) and the calibration generator that
judges them through the report's own path (calibration, `python -m lab.calibration`), which writes the committed
table coatsearch/papers/calibration.json. Nothing in the package imports the lab; it imports the package."""
