"""entrypoints/grpc"""
