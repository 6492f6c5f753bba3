"""Emulated cluster: network namespaces, veth links, tc shaping; workers and benchmarks."""
