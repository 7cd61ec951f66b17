"""Kernel families: each knows its axes, knobs, kernarg signature, metadata
fields, match constraints and templates. A config names its family."""

from ingot.families import attention_decode

FAMILIES = {attention_decode.FAMILY.name: attention_decode.FAMILY}
