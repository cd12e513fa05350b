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

"""If-Match is a precondition of the Kubernetes write, not of a cache.

Two writers holding one ETag race, released together by a barrier: one
write applies, the other answers 412 PreconditionFailed and changes
nothing, in every round. The in-process server has one watch cache for
both; gunicorn (2 workers x 2 threads) has one per worker, so a writer
there may check the ETag against a cache that has not seen the other
write yet.
"""

import concurrent.futures
import threading

import pytest
import requests
from tests.functional.emulator import harness

ROUNDS = 30
LEDS = ('Lit', 'Blinking', 'Off')
CLOSE = {'Connection': 'close'}


@pytest.fixture(scope='module')
def workers(config_file, tmp_path_factory):
    process = harness.emulator_process(
        'gunicorn', config_file, tmp_path_factory.mktemp('gunicorn'))
    process.start()
    try:
        yield process.wait_ready()
    finally:
        process.stop()


@pytest.fixture(params=['in-process', 'gunicorn'])
def server(request, emulator):
    if request.param == 'in-process':
        return emulator.url
    return request.getfixturevalue('workers').url


def _get(url):
    response = requests.get(url, headers=CLOSE, timeout=30)
    assert response.status_code == 200, response.text
    return response


def _race(requests_):
    """Send ``[(method, url, body, headers)]`` at once; the responses."""
    barrier = threading.Barrier(len(requests_), timeout=30)

    def send(request):
        method, url, body, headers = request
        barrier.wait()
        return requests.request(method, url, json=body, timeout=60,
                                headers=dict(CLOSE, **headers))
    with concurrent.futures.ThreadPoolExecutor(len(requests_)) as pool:
        return list(pool.map(send, requests_))


def _precondition_failed(response):
    assert response.status_code == 412, response.text
    error = response.json()['error']
    assert error['code'] == 'Base.1.16.PreconditionFailed', error
    assert error['@Message.ExtendedInfo'][0]['MessageId'] == error['code']


def test_two_writers_one_etag_exactly_one_wins(sim, server, machine):
    url = server + machine.path
    for round_ in range(ROUNDS):
        # Under gunicorn a GET may reach a worker whose cache has not seen
        # the last round's write: its stale ETag would rightly be refused.
        current = harness.wait_caught_up(sim, url, machine.name)
        tag = current.headers['ETag']
        led = current.json()['IndicatorLED']
        wanted = [v for v in LEDS if v != led]
        answers = _race([('PATCH', url, {'IndicatorLED': value},
                          {'If-Match': tag}) for value in wanted])
        codes = sorted(a.status_code for a in answers)
        assert codes == [204, 412], (round_, [a.text for a in answers])
        winner = wanted[[a.status_code for a in answers].index(204)]
        _precondition_failed(answers[[a.status_code for a in answers]
                                     .index(412)])
        stored = harness.vm(sim, machine.name)['metadata']['annotations']
        assert stored['sushy-kubevirt.io/indicator-led'] == winner, round_


def test_a_consumed_etag_is_refused(sim, server, machine):
    url = server + machine.path
    for round_ in range(ROUNDS // 3):
        current = harness.wait_caught_up(sim, url, machine.name)
        tag = current.headers['ETag']
        led = current.json()['IndicatorLED']
        first, second = [v for v in LEDS if v != led]
        response = requests.patch(url, json={'IndicatorLED': first},
                                  headers=dict(CLOSE, **{'If-Match': tag}),
                                  timeout=30)
        assert response.status_code == 204, response.text
        before = harness.vm(sim, machine.name)
        response = requests.patch(url, json={'IndicatorLED': second},
                                  headers=dict(CLOSE, **{'If-Match': tag}),
                                  timeout=30)
        _precondition_failed(response)
        assert harness.vm(sim, machine.name) == before, round_


def test_two_resets_one_etag_exactly_one_is_performed(sim, emulator,
                                                      machines):
    """A Reset (a subresource call) consumes its ETag on the VM first."""
    for round_ in range(5):
        machine = machines()
        url = emulator.url + machine.path
        tag = _get(url).headers['ETag']
        sim.request_log.clear()
        answers = _race([('POST', url + '/Actions/ComputerSystem.Reset',
                          {'ResetType': 'On'}, {'If-Match': tag})] * 2)
        codes = sorted(a.status_code for a in answers)
        assert codes == [204, 412], (round_, [a.text for a in answers])
        starts = [e for e in harness.api_calls(sim, method='PUT')
                  if e['path'].endswith('/start')]
        assert len(starts) == 1, (round_, starts)
        response = requests.post(url + '/Actions/ComputerSystem.Reset',
                                 json={'ResetType': 'ForceOff'},
                                 headers={'If-Match': tag}, timeout=30)
        _precondition_failed(response)
