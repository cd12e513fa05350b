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

"""The security log's Recorder against a stand-in watch (no thread)."""

import copy
import datetime
import re

import pytest

from sushy_kubevirt.accounts import recorder
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kubevirt import jsonpatch
from sushy_kubevirt.kubevirt import logentries

NOW = datetime.datetime.now(datetime.timezone.utc)
INVOLVED = {'kind': 'Secret', 'name': 'log', 'namespace': 'ns'}


class Watch:
    """A stand-in API server and cache; ``refuse``: the next writes fail."""

    def __init__(self):
        self.stored, self.cached, self.refuse = {}, {}, []

    def started(self):
        return self, self

    def _store(self, obj):
        obj['metadata']['resourceVersion'] = str(len(self.stored) + 100 +
                                                 int(obj.get('count', 0)))
        self.stored[obj['metadata']['name']] = obj
        return copy.deepcopy(obj)

    def create(self, resource, namespace, body):
        if self.refuse:
            raise self.refuse.pop(0)
        if body['metadata']['name'] in self.stored:
            raise apierrors.Conflict('exists', status=409)
        return self._store(copy.deepcopy(body))

    def patch(self, resource, namespace, name, operations):
        if self.refuse:
            raise self.refuse.pop(0)
        current = self.stored[name]
        if current['metadata']['resourceVersion'] != operations[0]['value']:
            raise apierrors.Conflict('test failed', status=422)
        return self._store(jsonpatch.apply(current, operations))

    def get(self, namespace, name):
        return self.cached.get(name)

    def note_write(self, obj):
        self.cached[obj['metadata']['name']] = logentries.slim(obj)

    def sync(self):
        self.cached = {k: logentries.slim(v) for k, v in self.stored.items()}


@pytest.fixture
def made(monkeypatch):
    # The time of this test (one taken at import could be a window behind
    # the clock by the time a parallel run reaches it).
    monkeypatch.setitem(globals(), 'NOW',
                        datetime.datetime.now(datetime.timezone.utc))
    monkeypatch.setattr(recorder.Recorder, '_wake', lambda self: None)
    monkeypatch.setattr(recorder, '_counts', recorder.collections.Counter())
    watch = Watch()
    return watch, recorder.Recorder(watch, 'ns', INVOLVED, 'host/1')


def unwritten():
    found = re.search(r'outcome="unwritten"} (\d+)', recorder.metrics_text())
    return int(found.group(1))


def test_one_event_per_reason_and_account_whatever_the_client(made):
    watch, rec = made
    for index in range(30):
        rec.note('LoginFailed', 'first from 10.0.0.%d' % index, None,
                 '10.0.0.%d' % (index % 7), NOW)
    rec.note('LoginFailed', 'other', 'admin', '10.0.0.1', NOW)
    rec.note('SessionCreated', 'in', 'admin', '10.0.0.1', NOW)
    assert not watch.stored and rec.held() == 32   # none in the request
    rec.flush()                                    # the thread's: at once
    [unknown] = [e for e in watch.stored.values()
                 if e['message'] == 'first from 10.0.0.0']
    assert unknown['count'] == 30
    assert unknown['metadata']['annotations'] == {logentries.CLIENTS: '7'}
    assert rec.held() == 0 and unwritten() == 0


def test_the_next_window_is_another_event(made):
    watch, rec = made
    rec.note('LoginFailed', 'a', 'admin', 'c', NOW)
    rec.note('LoginFailed', 'b', 'admin', 'c', NOW + datetime.timedelta(
        seconds=recorder.WINDOW))
    rec.flush()
    assert len(watch.stored) == 2


def test_a_concurrent_writer_loses_no_occurrence(made):
    watch, rec = made
    rec.note('LoginFailed', 'a', 'admin', 'c', NOW)
    rec.flush()
    rec.note('LoginFailed', 'a', 'admin', 'c', NOW)
    # another process adds 5 after this one read the Event
    [name] = watch.stored
    other = copy.deepcopy(watch.stored[name])
    watch.patch(None, 'ns', name, logentries.recount(other, 5, 1, NOW))
    rec.flush(force=True)
    assert rec.held() == 1                 # refused: it was stale
    watch.sync()
    rec.flush(force=True)
    assert watch.stored[name]['count'] == 7 and rec.held() == 0
    assert watch.stored[name]['metadata']['annotations'][
        logentries.CLIENTS] == '2'


def test_created_by_another_process_then_counted_on_it(made):
    watch, rec = made
    window = datetime.datetime.fromtimestamp(
        NOW.timestamp() // recorder.WINDOW * recorder.WINDOW,
        datetime.timezone.utc)
    name = logentries.aggregate_name('log', 'LoginFailed', 'admin', window)
    watch.stored[name] = {'metadata': {'name': name, 'resourceVersion': '9'},
                          'count': 3}
    rec.note('LoginFailed', 'a', 'admin', 'c', NOW)
    rec.flush()                             # created already: Conflict
    assert rec.held() == 1
    watch.sync()
    rec.flush(force=True)
    assert watch.stored[name]['count'] == 4


def test_what_cannot_be_written_is_counted(made, monkeypatch):
    watch, rec = made
    watch.refuse.append(apierrors.Forbidden('no', status=403))
    rec.note('LoginFailed', 'a', 'admin', 'c', NOW)
    rec.flush()                                         # never raises
    assert unwritten() == 1 and not watch.stored
    monkeypatch.setattr(recorder, 'RECORDS', 1)
    rec.note('SessionCreated', 'b', 'admin', 'c', NOW)
    assert unwritten() == 2
    # an occurrence still unwritten a window after its own is given up
    monkeypatch.setattr(rec, '_bucket', recorder.limiter.TokenBucket(
        1e-6, 1))
    assert rec._bucket.take()
    rec.note('LoginFailed', 'a', 'admin', 'c', NOW)
    assert rec.held() == 1
    monkeypatch.setattr(recorder.time, 'time', lambda: NOW.timestamp() +
                        3 * recorder.WINDOW)
    rec.flush()
    assert unwritten() == 3 and rec.held() == 0


def test_without_a_token_the_count_waits(made, monkeypatch):
    watch, rec = made
    monkeypatch.setattr(rec, '_bucket', recorder.limiter.TokenBucket(
        1e-6, 1))
    rec.note('LoginFailed', 'a', 'admin', 'c', NOW)
    rec.note('LoginFailed', 'b', 'other', 'c', NOW)
    rec.flush()
    assert len(watch.stored) == 1 and rec.held() == 1
    rec.flush()
    assert rec.held() == 1
    rec.stop(wait=5)                        # at exit: no token needed
    assert len(watch.stored) == 2 and rec.held() == 0
