"""The registries: the optimizer families, the transfer axes and the roles, each the one list the rest of the
package reads, and each open to a user's entries. Plain data, no torch."""

from .axes import TRANSFER_AXES, Axis, axis_named, axis_of_column, generic_axis
from .base import Registry
from .families import FAMILIES, OptimizerFamily
from .roles import ROLES, Role

__all__ = ["Registry", "FAMILIES", "OptimizerFamily", "ROLES", "Role", "TRANSFER_AXES", "Axis", "axis_named",
           "axis_of_column", "generic_axis"]
