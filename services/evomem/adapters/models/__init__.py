"""adapters/models"""
