"""Analysis, pure numpy/pandas/matplotlib (no torch): the optimum per width (``optimum``), its drift and
the verdict (``drift``), the range predicted at a target width (``prediction``), a verified width's error and
regret (``fidelity``), two runs compared (``compare``), Student's t quantiles
(``stats``), the run's tables and summary (``summary``), the coordinate check's slopes and verdicts
(``stability``), the figures (``plots``) and drawing a run's figures (``draw``)."""
