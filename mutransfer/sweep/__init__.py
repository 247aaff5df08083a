"""Sweeps on Optuna storages: the spec (``spec``), which point to train next (``policy``), storages and
worker liveness (``storage``, ``liveness``), studies and their queue (``studies``), one trial's config
(``trial``), the worker loop (``worker``), the processes and progress (``runner``), the tables read back
from a storage (``tables``) and the worker-layout tuner (``layout``). Simulated sweeps live in
``mutransfer.simulation``."""
