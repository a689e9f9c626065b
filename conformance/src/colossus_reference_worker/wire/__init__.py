"""Request bytes on the wire: the message codec and the guards that run before decoding.

``protowire`` holds the protobuf primitives; ``schema`` and ``guard`` refuse hostile
shapes and sizes from the raw bytes (W7); ``codec`` reads each request through them and
decodes it only then.
"""
