"""KubeVirt systems and virtual-media drivers for sushy-tools."""
