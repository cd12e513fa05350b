"""Benchmarks: Ironic-shaped Redfish load against the emulator.

``python -m sushy_kubevirt.bench`` starts the simulator, the emulator (this
driver warm, on its live-read path, and sushy-tools' ``--fake`` driver) and a
load generator, each in its own process on 127.0.0.1, and prints a table of
latency, throughput and Kubernetes API calls per Redfish request.
"""
