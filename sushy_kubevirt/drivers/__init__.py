"""sushy-tools systems and virtual-media drivers backed by KubeVirt."""
