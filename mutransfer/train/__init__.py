"""One training run, plain PyTorch (no Hydra, Optuna or rich): data (``data``), the token budget (``budget``),
the training FLOPs (``flops``), the device (``device``), the loop for one model or K stacked trials (``loop``,
``stacking``), a step timer (``timing``) and the coordinate-check measurement (``coordcheck``)."""
