"""Diagnostics tests: the error type and message of every rejected specification or construct."""
