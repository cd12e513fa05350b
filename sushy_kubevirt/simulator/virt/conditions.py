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

"""VM/VMI ``status.conditions``: lookups and in-place edits."""

from sushy_kubevirt.simulator import storage


def condition(obj, ctype):
    for cond in (obj or {}).get('status', {}).get('conditions') or ():
        if cond.get('type') == ctype:
            return cond
    return None


def has_true(obj, ctype):
    cond = condition(obj, ctype)
    return bool(cond and cond.get('status') == 'True')


def make(ctype, value, reason='', message=''):
    cond = {'type': ctype, 'status': value, 'lastProbeTime': None,
            'lastTransitionTime': storage.now_iso()}
    if reason:
        cond['reason'] = reason
    if message:
        cond['message'] = message
    return cond


def put(status, cond):
    """Add or replace a condition, keeping it untouched if unchanged."""
    conds = status.setdefault('conditions', [])
    for idx, old in enumerate(conds):
        if old.get('type') == cond['type']:
            if all(old.get(k) == cond.get(k)
                   for k in ('status', 'reason', 'message')):
                return
            conds[idx] = cond
            return
    conds.append(cond)


def drop(status, ctype):
    status['conditions'] = [c for c in status.get('conditions') or ()
                            if c.get('type') != ctype]


def agent_connected():
    """AgentConnected as virt-handler sets it (probe time, no reason)."""
    return {'type': 'AgentConnected', 'status': 'True',
            'lastProbeTime': storage.now_iso(), 'lastTransitionTime': None}


def paused():
    return make('Paused', 'True', 'PausedByUser', 'VMI was paused by user')


def pause(status):
    """Paused, and so not Ready.

    virt-controller copies the Ready of the virt-launcher pod, whose
    readiness gate ``kubevirt.io/virtual-machine-unpaused`` it sets False.
    """
    put(status, paused())
    put(status, make('Ready', 'False', 'ReadinessGatesNotReady',
                     'the status of pod readiness gate "kubevirt.io/'
                     'virtual-machine-unpaused" is not "True", but False'))


def unpause(status):
    drop(status, 'Paused')
    put(status, make('Ready', 'True'))


def vmi_not_exists():
    return make('Ready', 'False', 'VMINotExists', 'VMI does not exist')
