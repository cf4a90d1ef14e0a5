"""Helpers of benchmarks/peers.py (raptor beside Numba, Warp and plain JAX): cases.py (the
work and its NumPy reference), host.py and jax_side.py (each system's version of it, run in
worker processes), numba_steps.py (the Numba loops), timing.py, report.py (table, plots).
Start reading at benchmarks/peers.py.
"""
