"""Continuous global optimization: rigorous spatial branch-and-bound with interval bounds on subdomains."""
