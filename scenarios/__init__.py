"""Scenario data (GPU specs, layers, networks, partition tables, calibration profiles) shipped as package data."""
