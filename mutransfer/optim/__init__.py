"""Optimizer math: Newton–Schulz msign (``newton_schulz``), the per-role steepest-descent directions and
the ``SteepestDescent`` optimizer (``steepest``), and AdamW/SGD for stacked trials (``stacked``), all
stepping each parameter through one per-parameter loop (``base``), the learning-rate schedule over a run
(``schedule``), and the first step's check that an optimizer steps its model's parameters (``stale``)."""
