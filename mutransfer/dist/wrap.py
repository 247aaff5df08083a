"""The model over the ranks: replicated (``ddp``: torch's DistributedDataParallel averages the gradients) or
sharded (``fsdp``: FSDP2's ``fully_shard`` on every block, then on the root). Blocks are the children of the
model's ``nn.ModuleList``s (the GPT's ``blocks``, a transformer's layers)."""

from __future__ import annotations

from torch import nn

from .ranks import Ranks

__all__ = ["spread", "blocks_of"]


def blocks_of(model: nn.Module) -> list[nn.Module]:
    """The children of every ``nn.ModuleList`` in the model, outermost first: the units FSDP2 shards."""
    return [child for module in model.modules() if isinstance(module, nn.ModuleList) for child in module]


def spread(model: nn.Module, ranks: Ranks) -> nn.Module:
    """The module the training steps call: DDP around ``model``, or ``model`` itself sharded in place by FSDP2
    (its parameters become DTensors; build the optimizer after this)."""
    if ranks.parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [ranks.device.index] if ranks.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids, process_group=ranks.group)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(ranks.device.type, (ranks.world,))
    for block in blocks_of(model):
        fully_shard(block, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model
