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

"""The EventService's Server-Sent Events stream, over real HTTP."""

import dataclasses

import pytest
import requests
from sushy_tools.emulator import main
from tests.functional.emulator import harness
from tests.functional.events import conftest
from tests.functional.events import sse

from sushy_kubevirt.redfish import eventservice
from sushy_kubevirt.redfish import sse as ssemod


@pytest.fixture(scope='module')
def emulator(config_file):
    with harness.InProcess(config_file) as server:
        conftest.wait_leader([server.url])   # its EventService watches
        yield server


@pytest.fixture(autouse=True)
def fast_keepalive(monkeypatch):
    monkeypatch.setattr(ssemod, 'KEEPALIVE', 0.2)


def test_service_advertises_the_stream(emulator):
    body = requests.get(emulator.url + '/redfish/v1/EventService',
                        timeout=10).json()
    assert body['ServerSentEventUri'] == sse.URI


def test_a_power_change_arrives_on_the_stream(sim, emulator):
    path = conftest.system_path(sim, 'vm-00000')
    with sse.Stream(emulator.url) as stream:
        assert stream.response.status_code == 200
        assert stream.response.headers['Content-Type'].startswith(
            'text/event-stream')
        conftest.reset(emulator.url, path, 'On')
        event_id, body = stream.next(sse.about(path, 'ResourcePoweredOn'))
    record = body['Events'][0]
    assert event_id == record['EventId'] == body['Id']
    assert body['@odata.type'].startswith('#Event.')
    assert record['MessageArgs'] == [path.rpartition('/')[2]]


def test_filter_and_last_event_id(sim, emulator):
    wanted = conftest.system_path(sim, 'vm-00001')
    query = {'$filter': "OriginResource eq '%s' or MessageId eq "
             "'ResourceEvent.ResourcePaused'" % wanted}
    with sse.Stream(emulator.url, params=query) as stream:
        conftest.edit_cores(sim, 'vm-00002', 3)
        conftest.edit_cores(sim, 'vm-00001', 3)
        first, body = stream.next()
        # vm-00002 changed first: the filter left its event out.
        assert body['Events'][0]['OriginOfCondition']['@odata.id'] == wanted
        conftest.edit_cores(sim, 'vm-00001', 4)
        second, _ = stream.next()
    # A client resuming after the first event gets the second again.
    with sse.Stream(emulator.url, params=query,
                    headers={'Last-Event-ID': first}) as resumed:
        assert resumed.next()[0] == second


def test_bad_filter_and_accept_are_errors(emulator):
    answer = requests.get(emulator.url + sse.URI, timeout=10,
                          params={'$filter': "Severity eq 'OK'"})
    assert answer.status_code == 400
    assert answer.json()['error']['code'].endswith(
        'QueryParameterValueFormatError')
    answer = requests.get(emulator.url + sse.URI, timeout=10,
                          headers={'Accept': 'application/json'})
    assert answer.status_code == 406
    assert answer.headers['Content-Type'].startswith('application/json')
    assert '@Message.ExtendedInfo' in answer.json()['error']
    for accept in ('text/event-stream;charset=utf-8', 'text/*, */*;q=0.1'):
        with sse.Stream(emulator.url, headers={'Accept': accept}) as stream:
            assert stream.response.status_code == 200, accept


def test_streams_are_bounded(emulator, monkeypatch):
    service = eventservice.event_service_of(main.app)
    monkeypatch.setattr(service, 'settings', dataclasses.replace(
        service.settings, sse_streams=1))
    with sse.Stream(emulator.url) as first:
        assert first.response.status_code == 200
        refused = requests.get(emulator.url + sse.URI, timeout=10)
        assert refused.status_code == 503
        assert refused.headers['Retry-After']
        assert refused.json()['error']['code'].endswith(
            'ServiceTemporarilyUnavailable')
    # The closed stream's slot is free once the server notices.

    def opened():
        stream = sse.Stream(emulator.url)
        stream.close()
        return stream.response.status_code == 200
    harness.wait_until(opened, 20, 0.2, 'a free stream slot')


def test_gunicorn_worker_streams_its_events(sim, config_file, tmp_path):
    process = harness.emulator_process('gunicorn', config_file, tmp_path)
    process.start()
    try:
        url = process.wait_ready().url
        path = conftest.system_path(sim, 'vm-00003')
        with sse.Stream(url) as stream:
            assert stream.response.status_code == 200
            conftest.reset(url, path, 'On')
            stream.next(sse.about(path, 'ResourcePoweredOn'))
    finally:
        process.stop()
