# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The ETag of a System: a digest of what it is rendered from.

A System and its sub-resources are rendered from its VirtualMachine, its
VirtualMachineInstance, the DataVolumes and the PersistentVolumeClaims its
volumes name; their uids and resourceVersions change with every change of
any of them (a claim's resize included), and every worker and replica
sees the same ones, so the ETag they give agrees.
"""

import hashlib

from sushy_kubevirt.kubevirt import fields


def _version(obj):
    if not obj:
        return '-'
    return '%s/%s' % (fields.get(obj, 'metadata', 'uid'),
                      fields.get(obj, 'metadata', 'resourceVersion'))


def etag(vm, vmi, datavolumes=()):
    """A strong ETag (quoted) of ``vm``, ``vmi`` and ``datavolumes``.

    ``datavolumes``: the DataVolume and PVC dicts the System shows.
    """
    parts = [_version(vm), _version(vmi)] + sorted(
        '%s=%s' % (fields.get(dv, 'metadata', 'name'), _version(dv))
        for dv in datavolumes)
    return '"%s"' % hashlib.sha256('|'.join(parts).encode()).hexdigest()[:24]
