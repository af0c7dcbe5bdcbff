"""HiPrBERT (Cai et al., 2023): pair distances from hierarchies, batches that cover every distance, the
hierarchy-aware pre-training task and the held-out hierarchy evaluation."""

from linker.hierarchy.graph import DISTANCE_NAMES, HierarchySource, NoHierarchyError, held_out

__all__ = ["DISTANCE_NAMES", "HierarchySource", "NoHierarchyError", "held_out"]
