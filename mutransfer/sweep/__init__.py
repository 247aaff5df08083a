"""Sweeps on Optuna storages, in four layers, each importing only the ones before it:

- ``spec``: the spec read from YAML and the command line (``sweep_spec``; its axes, constants, overrides, search
  and trainer sections; the setup labels a trial's row names);
- ``plan``: built once from the spec (``sweep_plan``: the studies, as ``keys``, the tiers they train in, the looks
  and what each study waits for), which point to train next (``policy``), one trial's config (``trial``) and what a
  sweep will cost (``estimate``, from ``finished`` trials' ``measured_cost``);
- ``store``: the Optuna storage (``storage``, riding out outages: ``resilient``), studies and their queue
  (``studies``), a trial's bookkeeping attributes (``attrs``), worker liveness, heartbeats and the reaper, the
  tables read back (``tables``) and whether a sweep finished (``completion``);
- ``run``: the processes (``runner``), the worker loop (``worker``) and its parts (claiming a point: ``claims``;
  the plan's waits read against the storage: ``gates``, ``stage_gate``, ``constant_gate``, ``stopping``; what
  trains a trial: ``trainer``, ``command_trainer``, ``child_process``; what Optuna is told: ``outcomes``; repeated
  failures: ``repeats``), the answer so far (``provisional``) and the worker-layout tuner (``layout``).

``interrupts`` (Ctrl-C and SIGTERM as exceptions) serves every layer. Simulated sweeps live in
``mutransfer.simulation``."""
