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

import pytest

from sushy_kubevirt.kubevirt import bootprogress

RUN = '2026-01-01T10:00:01Z'
PROBE = '2026-01-01T10:00:09Z'
END = '2026-01-01T10:05:00Z'


def _vmi(phase, *conditions, uid='u1'):
    times = [{'phase': 'Pending', 'phaseTransitionTimestamp':
              '2026-01-01T10:00:00Z'}]
    if phase in ('Running', 'Succeeded', 'Failed'):
        times.append({'phase': 'Running', 'phaseTransitionTimestamp': RUN})
    if phase in ('Succeeded', 'Failed'):
        times.append({'phase': phase, 'phaseTransitionTimestamp': END})
    return {'metadata': {'uid': uid},
            'status': {'phase': phase, 'phaseTransitionTimestamps': times,
                       'conditions': list(conditions)}}


VM = {'metadata': {'name': 'vm'}, 'spec': {'runStrategy': 'Manual'},
      'status': {}}
AGENT = {'type': 'AgentConnected', 'status': 'True',
         'lastProbeTime': PROBE, 'lastTransitionTime': None}


@pytest.mark.parametrize('vmi, expected', [
    (None, {'LastState': 'None'}),
    (_vmi('Scheduling'), {'LastState': 'None'}),
    (_vmi('Scheduled'), {'LastState': 'None'}),
    (_vmi('Running'), {'LastState': 'OSBootStarted', 'LastStateTime': RUN}),
    (_vmi('Running', AGENT), {'LastState': 'OSRunning',
                              'LastStateTime': PROBE}),
    (_vmi('Running', dict(AGENT, status='False')),
     {'LastState': 'OSBootStarted', 'LastStateTime': RUN}),
    (_vmi('Succeeded'), {'LastState': 'None', 'LastStateTime': END}),
    (_vmi('Failed'), {'LastState': 'None', 'LastStateTime': END}),
])
def test_boot_progress(vmi, expected):
    assert bootprogress.boot_progress(VM, vmi) == expected


def test_a_new_vmi_starts_over():
    old = bootprogress.boot_progress(VM, _vmi('Running', AGENT, uid='old'))
    new = bootprogress.boot_progress(VM, _vmi('Running', uid='new'))
    assert (old['LastState'], new['LastState']) == ('OSRunning',
                                                    'OSBootStarted')


def test_a_transition_time_wins_over_the_probe_time():
    cond = dict(AGENT, lastTransitionTime='2026-01-01T10:00:05Z')
    assert bootprogress.boot_progress(VM, _vmi('Running', cond))[
        'LastStateTime'] == '2026-01-01T10:00:05Z'


def test_a_boot_going_away_is_over():
    vmi = _vmi('Running', AGENT)
    stopping = dict(VM, status={'stateChangeRequests': [
        {'action': 'Stop', 'uid': 'u1'}, {'action': 'Start'}]})
    assert bootprogress.boot_progress(stopping, vmi) == {'LastState': 'None'}
    vmi['metadata']['deletionTimestamp'] = END
    assert bootprogress.boot_progress(VM, vmi) == {
        'LastState': 'None', 'LastStateTime': END}
