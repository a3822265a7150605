"""What every report figure shares: resolution and the marker cycle (imported by each plotting module)."""

DPI = 120
MARKERS = "osD^v<>PX*hp"
