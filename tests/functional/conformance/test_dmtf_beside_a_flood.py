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

"""Valid clients beside a flood of wrong passwords from their address.

gunicorn 2 workers x 2 threads over HTTPS, accounts kept as Secrets, the
throttle and the lockout on (their defaults), 127.0.0.1 a trusted proxy.
While DMTF's Use Case Checkers run, and a client logs in, reads a System
with its ETag and logs out, a thread sends wrong passwords from the same
address: of another account, and of the checkers' own account from other
clients the proxy names. The owner of the account logged in from its
address before (a client the account-wide lockout spares). The valid
clients' requests are read from gunicorn's access log (the flood's carry
a User-Agent of their own): not one is refused with a 429, and the only
401s are the wrong password the checkers send on purpose.
"""

import base64
import collections
import importlib.util
import threading
import time

import pytest
import requests
from tests.functional.conformance import conftest
from tests.functional.conformance import dmtf
from tests.functional.conformance import test_dmtf_checkers as checkers
from tests.functional.conformance import validators
from tests.functional.emulator import harness


pytestmark = pytest.mark.validator

USER, PASSWORD = checkers.USER, checkers.PASSWORD
OTHER = 'flooded'
FLOOD_AGENT = 'flood/1.0'
SESSIONS = '/redfish/v1/SessionService/Sessions'
#: The flood's clients behind the trusted proxy (127.0.0.1).
CLIENTS = 50
#: Requests the flood sends at most.
FLOOD_MAX = 20000

sim = conftest.sim_fixture(1)


@pytest.fixture(scope='module')
def served(sim, tmp_path_factory):
    """``(url, cert, access log path)`` of the emulator."""
    validators.require(importlib.util.find_spec('cryptography'),
                       'cryptography not installed (tox -e validator)')
    for user in (USER, OTHER):
        harness.create_account_secret(sim, user, PASSWORD)
    tmp = tmp_path_factory.mktemp('flood')
    config = harness.write_config(
        tmp / 'emulator.conf', sim.write_kubeconfig(str(tmp / 'kc')),
        SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE='secrets',
        SUSHY_EMULATOR_KUBEVIRT_TRUSTED_PROXIES=['127.0.0.1'])
    access = tmp / 'access.log'
    with dmtf.tls_emulator(config, tmp, access) as (url, cert):
        yield url, cert, access


def _basic(user, password):
    raw = ('%s:%s' % (user, password)).encode()
    return 'Basic ' + base64.b64encode(raw).decode()


def _flood(url, cert, stop, sent):
    """Wrong passwords until ``stop`` is set, at most :data:`FLOOD_MAX`."""
    with requests.Session() as http:
        http.headers['User-Agent'] = FLOOD_AGENT
        for index in range(FLOOD_MAX):
            if stop.is_set():
                return
            if index % 2:
                headers = {'Authorization': _basic(OTHER, 'guess-%d' % index)}
            else:
                headers = {'Authorization': _basic(USER, 'guess-%d' % index),
                           'X-Forwarded-For': '198.51.100.%d' % (
                               index // 2 % CLIENTS + 1)}
            sent[http.get(url + '/redfish/v1/Systems', headers=headers,
                          verify=cert, timeout=30).status_code] += 1


def _sessions_and_etags(url, cert, stop, answers):
    """Log in, GET a System, GET it If-None-Match its ETag, log out."""
    with requests.Session() as http:
        while not stop.is_set():
            login = http.post(url + SESSIONS, verify=cert, timeout=30, json={
                'UserName': USER, 'Password': PASSWORD})
            answers.append(login.status_code)
            if login.status_code != 201:
                continue
            token = {'X-Auth-Token': login.headers['X-Auth-Token']}
            systems = http.get(url + '/redfish/v1/Systems', headers=token,
                               verify=cert, timeout=30)
            system = url + systems.json()['Members'][0]['@odata.id']
            first = http.get(system, headers=token, verify=cert, timeout=30)
            again = http.get(system, verify=cert, timeout=30, headers=dict(
                token, **{'If-None-Match': first.headers.get('ETag', '')}))
            logout = http.delete(url + login.headers['Location'],
                                 headers=token, verify=cert, timeout=30)
            answers += [systems.status_code, first.status_code,
                        again.status_code, logout.status_code]


def test_use_case_checkers_pass_beside_a_flood(served, tmp_path):
    tool = validators.tool(checkers.USE_CASES)
    validators.require(tool, 'redfish-use-case-checkers not installed (tox '
                             '-e validator)')
    url, cert, access = served
    # The owner's client has logged in before.
    login = requests.post(url + SESSIONS, verify=cert, timeout=30, json={
        'UserName': USER, 'Password': PASSWORD})
    assert login.status_code == 201, login.text
    requests.delete(url + login.headers['Location'], verify=cert,
                    timeout=30, headers={
                        'X-Auth-Token': login.headers['X-Auth-Token']})
    stop, sent, answers = threading.Event(), collections.Counter(), []
    threads = [threading.Thread(target=_flood, args=(url, cert, stop, sent)),
               threading.Thread(target=_sessions_and_etags,
                                args=(url, cert, stop, answers))]
    for thread in threads:
        thread.start()
    rows, counts = [], collections.Counter()
    start = time.monotonic()
    try:
        for index, tests in enumerate(checkers.CATEGORIES):
            run = dmtf.use_case_checkers(tool, url, USER, PASSWORD,
                                         tmp_path / str(index), tests)
            rows += run.rows
            counts.update(run.counts)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    elapsed = time.monotonic() - start
    assert not any(thread.is_alive() for thread in threads)
    report = dmtf.Report(rows, counts)
    valid = [a for a in dmtf.access_log(access) if a.agent != FLOOD_AGENT]
    refused = collections.Counter((a.status, a.method, a.path)
                                  for a in valid if a.status in (401, 429))
    print('\nUse Case Checkers beside a flood of %d wrong passwords in %.0f '
          's (%s): %s; the valid clients: %d requests, refused %s'
          % (sum(sent.values()), elapsed, dict(sent), dict(report.counts),
             len(valid), dict(refused)))
    assert not report.counts['FAIL'], dmtf.failures(report)
    assert report.counts['PASS'] >= 25, report.counts
    assert sent[401] > 100 and sent[429], sent
    assert set(answers) <= {200, 201, 204, 304} and len(answers) > 10, \
        collections.Counter(answers)
    # The checkers' one wrong password per run of AccountManagement.
    assert refused == {(401, 'POST', SESSIONS): 1}, refused
