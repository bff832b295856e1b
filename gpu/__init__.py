"""Executors on real hardware and the NumPy references. Imports sim's contract, never sim.engine."""
