"""The domain core. No gRPC, Redis, HTTP or database imports live here."""
