"""Simulated sweeps with known truth, to check the analysis's claims by simulation rather than by the formulas
that produced them: the simulator of one setup's loss curves and the sweep's policies run on it
(``simulate``), the rates of its intervals, verdicts and comparisons (``simulated_rates``), and the constants
measured from real sweeps that make it realistic (``calibration``; their measurement from the tables,
``measured_calibration``, with ``calibration_tables`` and ``seed_calibration``). No command uses it; the tests
and ``scripts/`` (``bench_*.py``, ``calibrate_simulator.py``) do."""
