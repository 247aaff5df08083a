"""Analysis, pure numpy/pandas/matplotlib (no torch): the results as typed data (``result``, one point's in
``point_result``), the optimum per point (``optimum``) and the local fit that places its window (``local_fit``), the
thresholds the verdicts read (``thresholds``), the line along an axis and the verdict (``drift``), one law over every
axis (``law``), the range predicted at a target (``prediction``), a verified width's error and regret (``fidelity``),
two runs compared (``compare``), quantiles and tail probabilities (``stats``), numbers and intervals as text
(``cells``), the run's trials as the analysis reads them (``trial_table``), a run directory's files (``run_files``)
and its summary (``summary``), the transfer file's layout (``transfer_layout``) and the targets read back from it
(``transfer_targets``), the coordinate check's slopes and verdicts (``stability``), the figures (``plots``)
and drawing a run's figures (``draw``)."""
