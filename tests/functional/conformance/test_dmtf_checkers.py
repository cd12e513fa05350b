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

"""DMTF Redfish Protocol Validator and Use Case Checkers: 0 FAIL.

gunicorn 2 workers x 2 threads serves HTTPS (a self-signed certificate
made here) with accounts kept as Secrets (an Administrator made as an
operator would), sessions and the EventService on. Both tools run as
subprocesses with their own TLS options; every FAIL is a test failure.
"""

import collections
import importlib.util

import pytest
from tests.functional.conformance import conftest
from tests.functional.conformance import dmtf
from tests.functional.conformance import validators
from tests.functional.emulator import harness
from tests.functional.events import conftest as events


pytestmark = pytest.mark.validator

USER, PASSWORD = 'admin', 'Admin-password-1'
PROTOCOL, USE_CASES = 'rf_protocol_validator', 'rf_use_case_checkers'
#: The Use Case Checkers' categories, in two runs: BootOverride first,
#: while the System is Off. A GET then a PATCH with its ETag right after
#: PowerControl, while KubeVirt updates the running VM's status, could be
#: refused 412 (the ETag follows the VM's resourceVersion).
CATEGORIES = (('BootOverride',), ('AccountManagement', 'PowerControl'))

sim = conftest.sim_fixture(1)


def _tool(name, package):
    path = validators.tool(name)
    validators.require(path, '%s not installed (tox -e validator)' % package)
    return path


@pytest.fixture(scope='module')
def url(sim, tmp_path_factory):
    """The HTTPS URL of the emulator and its certificate."""
    validators.require(importlib.util.find_spec('cryptography'),
                       'cryptography not installed (tox -e validator)')
    harness.create_account_secret(sim, USER, PASSWORD)
    tmp = tmp_path_factory.mktemp('dmtf')
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE='secrets', **events.EVENTS)
    with dmtf.tls_emulator(config, tmp) as served:
        yield served


def test_protocol_validator_has_no_fail(url, tmp_path):
    tool = _tool(PROTOCOL, 'redfish-protocol-validator')
    base, cert = url
    report = dmtf.protocol_validator(tool, base, USER, PASSWORD, cert,
                                     tmp_path / 'reports')
    print('Protocol Validator: %s' % dict(report.counts))
    assert not report.counts['FAIL'], dmtf.failures(report)
    assert report.counts['PASS'] > 200, report.counts


def test_use_case_checkers_have_no_fail(url, tmp_path):
    tool = _tool(USE_CASES, 'redfish-use-case-checkers')
    rows, counts = [], collections.Counter()
    for index, tests in enumerate(CATEGORIES):
        run = dmtf.use_case_checkers(tool, url[0], USER, PASSWORD,
                                     tmp_path / str(index), tests)
        rows += run.rows
        counts.update(run.counts)
    report = dmtf.Report(rows, counts)
    print('Use Case Checkers: %s' % dict(report.counts))
    assert not report.counts['FAIL'], dmtf.failures(report)
    assert report.counts['PASS'] >= 25, report.counts
