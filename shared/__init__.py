"""Hindsight: shared contracts, settings and backends every service imports."""
