"""One match: its law, its record, its game log (format and re-simulation) and its writer.

The modules are imported by name (`cfarena.match.law`, ...); this package
file loads none of them, so an offline command loads only what it uses.
"""
