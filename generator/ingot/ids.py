"""Deterministic descriptor ids: uuid5 of a fixed namespace and the
descriptor's qualified name, so regeneration never changes them."""

import uuid

NAMESPACE = uuid.UUID("6f1d9a52-6c1e-5b7a-9a3e-1c0d2b7e4a10")


def descriptor_id(pack, kind, name):
    return str(uuid.uuid5(NAMESPACE, f"{pack}/{kind}/{name}"))


def kernel_id(inst):
    return descriptor_id(inst.pack, "kernel", inst.name)
