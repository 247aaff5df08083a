"""The model side: the built-in GPT (``gpt``), building a model from a config (``build``) and applying a
plan to a module — initialisation, forward multipliers, the optimizer (``apply``)."""
