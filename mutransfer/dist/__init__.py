"""One model on many devices through torch.distributed: a rank's place in its process group and the batch rows it
trains (``ranks``), the model replicated (DDP) or sharded per block (FSDP2) (``wrap``) and the launcher that
starts N ranks on this machine (``launch``)."""
