"""Gate tests: leases, the ledger, the coupling guard, configuration and CI output."""
