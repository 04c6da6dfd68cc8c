"""adapters/postgres"""
