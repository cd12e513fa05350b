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

"""A tiny ISO-9660 image: enough for Ironic's format inspector.

Ironic (oslo.utils' format inspector) recognises an ISO by the Primary
Volume Descriptor at 32 KiB ("CD001") and sizes it from the logical block
size and volume space size. No file system content is needed: the
"machines" are simulated and never boot it.
"""

import struct

SECTOR = 2048
SECTORS = 20


def _both16(value):
    return struct.pack('<H', value) + struct.pack('>H', value)


def _both32(value):
    return struct.pack('<I', value) + struct.pack('>I', value)


def _descriptor(kind):
    return bytes([kind]) + b'CD001' + b'\x01'


def tiny_iso(label='SUSHYKUBEVIRT'):
    """The bytes of a 40 KiB ISO-9660 image."""
    pvd = bytearray(SECTOR)
    pvd[0:7] = _descriptor(1)
    pvd[40:72] = label.ljust(32)[:32].encode('ascii')
    pvd[80:88] = _both32(SECTORS)
    pvd[120:124] = _both16(1)
    pvd[124:128] = _both16(1)
    pvd[128:132] = _both16(SECTOR)
    pvd[881] = 1
    terminator = bytearray(SECTOR)
    terminator[0:7] = _descriptor(255)
    image = bytes(16 * SECTOR) + bytes(pvd) + bytes(terminator)
    return image + bytes(SECTORS * SECTOR - len(image))
