"""gRPC adapters: clients that implement the ports, and servicers that expose core adapters.

``convert`` translates between domain objects and protobuf messages (the generated code in
``evomem.v1`` is never edited); ``errors`` maps the error vocabulary to status codes and back.
"""
