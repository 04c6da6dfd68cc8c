"""entrypoints/cli"""
