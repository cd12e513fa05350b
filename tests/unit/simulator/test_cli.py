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

from sushy_kubevirt.simulator import __main__ as cli
from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import virt


def test_guest_agent_flag_and_stage_delay():
    args = cli.parse_args(['--kubeconfig', 'kc', '--guest-agent',
                           '--stage-delays', 'running=1,agentconnected=2'])
    assert args.guest_agent is True
    delays = clock.stage_delays(virt.DEFAULT_DELAYS, args.stage_delays)
    assert delays['Running'] == 1.0 and delays['AgentConnected'] == 2.0
    assert cli.parse_args(['--kubeconfig', 'kc']).guest_agent is False


def test_bad_stage_delays_are_refused():
    with pytest.raises(argparse.ArgumentTypeError):
        cli._stage_delays('running')
