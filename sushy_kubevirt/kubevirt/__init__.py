"""Pure functions from KubeVirt objects to Redfish facts and patches."""
