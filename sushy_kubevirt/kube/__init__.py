"""Kubernetes access: client factory, watch cache, guarded writes."""
