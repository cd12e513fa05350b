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

"""A GET request's memo of its VM, VMI and DataVolume reads."""

from sushy_kubevirt.drivers import context


def _memo():
    """The current GET request's memo of VM and VMI reads, else None.

    sushy-tools calls about 16 driver methods to render one System; each
    reads the same VM and VMI. A GET changes nothing, so it reads each
    once: one coherent state per response, and on the pre-sync live path
    one API call per object instead of one per method. Requests that
    write read afresh every time.
    """
    request = context.current()
    return request.memo if request.method == 'GET' else None


def memoized(key, read):
    """``read()``, once per GET request and ``key``."""
    memo = _memo()
    if memo is None:
        return read()
    if key not in memo:
        memo[key] = read()
    return memo[key]
