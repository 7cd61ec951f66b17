"""ingot: casts GPU kernel packs from YAML pack configs."""

__version__ = "0.1.0"
