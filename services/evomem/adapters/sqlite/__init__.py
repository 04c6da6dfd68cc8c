"""adapters/sqlite"""
