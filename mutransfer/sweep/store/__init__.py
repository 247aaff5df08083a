"""A sweep's Optuna storage: opening it (``storage``; a database that rides out outages: ``resilient``), the studies
and their queue (``studies``), a trial's attributes (``attrs``), worker liveness (``liveness``), heartbeats
(``heartbeat``), failing dead workers' trials (``reaper``), the tables read back (``tables``) and whether the sweep
finished (``completion``)."""
