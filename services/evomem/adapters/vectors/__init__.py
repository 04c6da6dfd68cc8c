"""adapters/vectors"""
