"""What a tree model's own file discloses about its training records.

A fitted tree model stores, in every leaf, how many training records fell there.
:func:`read_trees` reads each record's leaf in each tree and those counts, for every
tree family tabmia audits; :func:`structural_findings` turns them into per-record and
per-model findings (leaf occupancy, records alone in their leaf, class disclosure).
Findings say where the file singles records out; they are not a membership test by
themselves (:class:`tabmia.attacks.LeafAttack` is one).
"""

from tabmia.structure.findings import StructureFindings, structural_findings
from tabmia.structure.leaves import NotATreeModelError, TreeLeaves, is_tree_model, read_trees

__all__ = [
    "NotATreeModelError",
    "StructureFindings",
    "TreeLeaves",
    "is_tree_model",
    "read_trees",
    "structural_findings",
]
