"""Helpers of the future-function tests: timed plans run through drasi-lib and the engine."""
