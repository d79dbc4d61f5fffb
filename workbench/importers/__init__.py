"""Importers: other systems' results -> a Pacebench store."""
