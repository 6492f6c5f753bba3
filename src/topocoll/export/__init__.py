"""Exporters: MSCCL XML (both runtime dialects) and Chakra execution traces for ASTRA-sim."""
