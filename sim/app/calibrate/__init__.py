"""Calibration: fit the model's free constants to measurements and check the fit on held-out data."""
