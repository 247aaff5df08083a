"""A sweep spec: ``sweeps/*.yaml`` and the command line read into a frozen ``SweepSpec`` (``sweep_spec``), its
axes (``axes``), per-role constants (``constants``), command-line overrides (``overrides``), searched grid
(``search``) and training command (``trainer``), and the labels a trial's row names (``setup_labels``). Plain
data, no Optuna."""
