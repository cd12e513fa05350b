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

"""``python -m sushy_kubevirt.simulator`` argument parsing."""

import argparse

import pytest

from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import command
from sushy_kubevirt.simulator import virt


def test_guest_agent_flag_and_stage_delay():
    args = command.parse_args(['--kubeconfig', 'kc', '--guest-agent',
                               '--stage-delays', 'running=1,agentconnected=2'])
    assert args.guest_agent is True
    delays = clock.stage_delays(virt.DEFAULT_DELAYS, args.stage_delays)
    assert delays['Running'] == 1.0 and delays['AgentConnected'] == 2.0
    assert command.parse_args(['--kubeconfig', 'kc']).guest_agent is False


def test_bad_stage_delays_are_refused():
    with pytest.raises(argparse.ArgumentTypeError):
        command._stage_delays('running')


def test_help_names_the_console_script_and_every_option(capsys):
    with pytest.raises(SystemExit):
        command.parse_args(['--help'])
    out = capsys.readouterr().out
    assert out.startswith('usage: sushy-kubevirt-simulator')
    assert '--crd-schemas DIR' in out and '--field-validation' in out
    for parser in (command.serve_parser(), command.fault_parser()):
        for action in parser._actions:
            assert action.help, action.option_strings


@pytest.mark.parametrize('argv, expected', [
    (['add', 'status', '--param', 'code=503', '--times', 'forever'],
     ('POST', '/faults', {'action': 'status', 'code': 503, 'times': None})),
    (['add', 'drop', '--param', 'partial=false', '--path', '/vms'],
     ('POST', '/faults', {'action': 'drop', 'partial': False,
                          'path': '/vms'})),
    (['add', 'status', '--param', 'message=boom', '--param', 'code=500'],
     ('POST', '/faults', {'action': 'status', 'code': 500,
                          'message': 'boom'})),
    (['remove', 'f3'], ('DELETE', '/faults/f3', None)),
    (['restart-api', '--down', '2'],
     ('POST', '/restart-api', {'down_seconds': 2.0})),
    (['forbid-namespace', 'lab'], ('POST', '/namespaces/lab/forbid', None)),
    (['allow-namespace', 'lab'], ('POST', '/namespaces/lab/allow', None)),
])
def test_fault_commands_map_to_control_requests(argv, expected):
    args = command.fault_parser().parse_args(['--url', 'http://x'] + argv)
    assert command.fault_request(args) == expected


def test_fault_times_must_be_positive():
    with pytest.raises(argparse.ArgumentTypeError):
        command._times('0')
