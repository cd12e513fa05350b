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

"""What a DataVolume's status says of its CDI import (pure; no I/O).

CDI v1.66 restarts a failing importer pod (kubelet's back-off: at once,
then 10 s, 20 s, ... up to 5 min) and keeps the DataVolume's phase
(ImportScheduled or ImportInProgress): the failure shows as the
``Running`` condition False with reason ``Error`` and the importer's
termination message, and a growing ``status.restartCount``. Phase
``Failed`` is left for fatal errors (a checksum mismatch).
"""

from sushy_kubevirt.kubevirt import fields

SUCCEEDED = 'Succeeded'
FAILED = 'Failed'


def condition(dv, kind):
    """The DataVolume's condition of type ``kind`` ({} when absent)."""
    for cond in fields.get(dv, 'status', 'conditions', default=[]):
        if cond.get('type') == kind:
            return cond
    return {}


def restarts(dv):
    """How often CDI restarted the importer (``status.restartCount``)."""
    count = fields.get(dv, 'status', 'restartCount', default=0)
    return count if isinstance(count, int) and count > 0 else 0


def failing(dv):
    """True when the importer's last attempt ended in an error."""
    running = condition(dv, 'Running')
    return (str(running.get('status')) == 'False'
            and 'error' in (running.get('reason') or '').lower())


def failed(dv):
    """True when the import failed, for good or until a retry succeeds.

    Phase ``Failed``, or an importer that failed again after CDI
    restarted it (``restartCount`` >= 1 and :func:`failing`): a bad URL
    reads failed within a second of the first restart, which is at once.
    """
    phase = fields.get(dv, 'status', 'phase')
    if phase == FAILED:
        return True
    return phase != SUCCEEDED and restarts(dv) >= 1 and failing(dv)
