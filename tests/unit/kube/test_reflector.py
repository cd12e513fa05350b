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

"""Reflector decisions against a scripted fake API (no network)."""

import json
import logging
import threading

import urllib3

from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import reflector
from sushy_kubevirt.kube import resources

TIMINGS = reflector.Timings(backoff_initial=0.001, backoff_cap=0.002,
                            watch_timeout=(5, 5), read_timeout=1,
                            short_watch=0.0)


def obj(name, rv):
    return {'metadata': {'name': name, 'namespace': 'ns',
                         'resourceVersion': str(rv)}}


class Stream:
    def __init__(self, events=(), error=None):
        self.events = events
        self.error = error

    def stream(self, amt, decode_content):
        for event in self.events:
            yield json.dumps(event).encode() + b'\n'
        if self.error:
            raise self.error

    def shutdown(self):
        pass

    def close(self):
        pass

    def release_conn(self):
        pass


class FakeApi:
    """Answers calls from a script; records them; ends after the script.

    The call after the script answers 429 with a long Retry-After, so the
    reflector waits there until stopped instead of spinning through more
    (recorded) calls while the test wakes up.
    """

    def __init__(self, script):
        self.script = list(script)
        self.calls = []
        self.done = threading.Event()

    def _next(self, call):
        self.calls.append(call)
        if not self.script:
            self.done.set()
            raise apierrors.TooManyRequests('script over', status=429,
                                            retry_after=60)
        answer = self.script.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def list(self, resource, namespace, selector, rv, limit, token):
        return self._next(('list', rv, limit, token))

    def watch(self, resource, namespace, selector, rv, timeout, read):
        return self._next(('watch', rv))


def page(items, rv, token=None):
    return {'items': items,
            'metadata': {'resourceVersion': str(rv), 'continue': token}}


def run(script):
    api = FakeApi(script)
    seen = []
    r = reflector.Reflector(
        api, resources.VM, lambda items, rv: seen.append(('replace', rv)),
        lambda kind, o: seen.append((kind, o['metadata']['name'])),
        namespace='ns', timings=TIMINGS)
    r.start()
    assert api.done.wait(10)
    r.stop()
    assert not r.alive
    return api.calls, seen


def test_clean_close_rewatches_from_last_event_without_relist():
    calls, seen = run([
        page([obj('a', 10)], 11),
        Stream([{'type': 'ADDED', 'object': obj('b', 12)},
                {'type': 'BOOKMARK', 'object': obj('', 20)}]),
        Stream([{'type': 'DELETED', 'object': obj('a', 21)}]),
    ])
    assert calls[:4] == [('list', None, 500, None), ('watch', '11'),
                         ('watch', '20'), ('watch', '21')]
    assert seen == [('replace', '11'), ('ADDED', 'b'), ('DELETED', 'a')]


def test_gone_relists_at_last_rv_then_latest():
    calls, _ = run([
        page([], 11),
        Stream([{'type': 'ADDED', 'object': obj('b', 12)},
                {'type': 'ERROR', 'object': {'kind': 'Status', 'code': 410,
                                             'reason': 'Expired'}}]),
        apierrors.Gone('too old', status=410),
        page([], 30),
        Stream(),
    ])
    assert calls[:6] == [('list', None, 500, None), ('watch', '11'),
                         ('list', '12', None, None),
                         ('list', None, 500, None), ('watch', '30'),
                         ('watch', '30')]


def test_drop_refused_and_429_rewatch_without_relist():
    calls, _ = run([
        page([], 11),
        Stream([{'type': 'ADDED', 'object': obj('b', 12)}],
               error=urllib3.exceptions.ProtocolError('drop')),
        apierrors.Unavailable('refused'),
        apierrors.TooManyRequests('slow', status=429, retry_after=0.001),
        Stream(error=urllib3.exceptions.ReadTimeoutError(None, '', 'x')),
    ])
    assert [c[0] for c in calls] == ['list'] + ['watch'] * 5
    assert {c[1] for c in calls[2:]} == {'12'}


def error_event(code, reason, message, **extra):
    return {'type': 'ERROR', 'object': dict(
        kind='Status', code=code, reason=reason, message=message, **extra)}


def test_too_large_in_stream_relists_latest():
    calls, seen = run([
        page([], 11),
        Stream([{'type': 'ADDED', 'object': obj('b', 12)},
                error_event(504, 'Timeout', 'Timeout: Too large resource '
                            'version: 12, current: 9', details={'causes': [
                                {'reason': 'ResourceVersionTooLarge'}]})]),
        page([obj('b', 8)], 9),
        Stream(),
    ])
    assert calls[:4] == [('list', None, 500, None), ('watch', '11'),
                         ('list', None, 500, None), ('watch', '9')]


def test_too_large_list_falls_back_to_latest():
    too_large = apierrors.ApiError(
        'Timeout: Too large resource version: 12', status=504)
    calls, _ = run([
        page([], 11),
        Stream([{'type': 'ADDED', 'object': obj('b', 12)},
                error_event(503, 'ServiceUnavailable', 'try later')]),
        too_large,
        page([], 13),
        Stream(),
    ])
    assert calls[:5] == [('list', None, 500, None), ('watch', '11'),
                         ('list', '12', None, None),
                         ('list', None, 500, None), ('watch', '13')]


def test_internal_error_rewatches_other_errors_relist_at_last_rv():
    calls, _ = run([
        page([], 11),
        Stream([error_event(500, 'InternalError', 'etcd hiccup')]),
        Stream([{'type': 'ADDED', 'object': obj('b', 12)},
                error_event(504, 'Timeout', 'timed out')]),
        page([], 13),
    ])
    assert calls[:4] == [('list', None, 500, None), ('watch', '11'),
                         ('watch', '11'), ('list', '12', None, None)]


def test_counts_relists_watch_restarts_and_rv_age():
    now = [100.0]
    api = FakeApi([page([], 11), Stream([
        {'type': 'BOOKMARK', 'object': obj('', 20)},
        error_event(410, 'Expired', 'too old')]), page([], 21)])
    r = reflector.Reflector(api, resources.VM, lambda *a: None,
                            lambda *a: None, timings=TIMINGS,
                            clock=lambda: now[0])
    assert r.rv_age() is None
    r.start()
    assert api.done.wait(10)
    r.stop()
    now[0] += 7
    assert (r.relists, r.watch_restarts) == (1, 1)
    assert r.rv_age() == 7


def test_forbidden_backs_off_and_relists():
    calls, _ = run([
        apierrors.Forbidden('no', status=403),
        page([], 11),
        apierrors.Forbidden('no', status=403),
        page([], 12),
    ])
    assert [c[0] for c in calls[:5]] == ['list', 'list', 'watch', 'list',
                                         'watch']


def test_paginated_list_and_expired_continue():
    calls, seen = run([
        page([obj('a', 1)], 11, token='t1'),
        apierrors.Gone('continue expired', status=410),
        page([obj('a', 1), obj('b', 2)], 12),
    ])
    assert calls[:3] == [('list', None, 500, None),
                         ('list', None, 500, 't1'),
                         ('list', None, None, None)]
    assert seen[0] == ('replace', '12')


def test_short_empty_watch_is_an_error():
    errors_seen = []

    class Api(FakeApi):
        def watch(self, *args):
            errors_seen.append(type(r.last_error).__name__)
            return super().watch(*args)

    api = Api([page([], 11), Stream(), Stream()])
    r = reflector.Reflector(
        api, resources.VM, lambda *a: None, lambda *a: None,
        timings=reflector.Timings(backoff_initial=0.001, backoff_cap=0.002,
                                  short_watch=60))
    r.start()
    assert api.done.wait(10)
    r.stop()
    assert errors_seen == ['NoneType', '_Retry', '_Retry']


def delays(caplog):
    """The backoff delays the reflector logged, in order."""
    return [float(m.split('retrying in ')[1].split(' s')[0])
            for m in (r.getMessage() for r in caplog.records)
            if 'retrying in' in m]


def run_logged(script, caplog, timings):
    api = FakeApi(script)
    r = reflector.Reflector(api, resources.VM, lambda *a: None,
                            lambda *a: None, namespace='ns',
                            timings=timings, rand=Rand0())
    with caplog.at_level(logging.DEBUG, logger='sushy_kubevirt'):
        r.start()
        assert api.done.wait(10)
        r.stop()
    return api.calls, delays(caplog)[:-1]   # the last: the script's end


class Rand0:
    """No jitter: each delay is the backoff's ``d`` exactly."""

    def random(self):
        return 0.0

    def uniform(self, low, high):
        return low


def test_success_resets_the_backoff_so_failures_never_stack(caplog):
    timings = reflector.Timings(backoff_initial=0.01, backoff_cap=0.04,
                                watch_timeout=(5, 5), short_watch=0.0)
    refused = apierrors.Unavailable('refused')
    calls, seen = run_logged([
        page([], 11), refused, refused, refused, refused,
        # Back: the watch is accepted, then drops.
        Stream(error=urllib3.exceptions.ProtocolError('drop')),
        refused, Stream(), Stream(),
    ], caplog, timings)
    # Doubling up to the cap while refused; the accepted watch starts
    # the next spell from the initial delay again.
    assert seen == [0.01, 0.02, 0.04, 0.04, 0.01, 0.02]


def test_gone_relists_at_once_then_backs_off_within_a_spell(caplog):
    timings = reflector.Timings(backoff_initial=0.01, backoff_cap=0.04,
                                backoff_reset=60, watch_timeout=(5, 5),
                                short_watch=0.0)
    gone = error_event(410, 'Expired', 'too old')
    calls, seen = run_logged([
        page([], 11), apierrors.Unavailable('refused'),
        Stream([gone]), page([], 20),          # at once
        Stream([gone]), page([], 30),          # after a backoff
        Stream(),
    ], caplog, timings)
    assert [c[0] for c in calls[:7]] == ['list', 'watch', 'watch', 'list',
                                         'watch', 'list', 'watch']
    assert seen == [0.01, 0.01]


def test_each_page_goes_through_page_as_it_arrives():
    api = FakeApi([
        page([obj('a', 1)], 11, token='t1'),
        page([obj('b', 2)], 11, token='t2'),
        apierrors.Gone('continue expired', status=410),
        page([obj('a', 1), obj('b', 2), obj('c', 3)], 12),
    ])
    pages, replaced = [], []

    def keep_names(items):
        pages.append([o['metadata']['name'] for o in items])
        return [o['metadata']['name'] for o in items]

    r = reflector.Reflector(
        api, resources.VM, lambda items, rv: replaced.append((items, rv)),
        lambda *a: None, namespace='ns', timings=TIMINGS, page=keep_names)
    r.start()
    assert api.done.wait(10)
    r.stop()
    assert pages == [['a'], ['b'], ['a', 'b', 'c']]
    # The pages read before the token expired are not kept.
    assert replaced[0] == (['a', 'b', 'c'], '12')
    assert api.calls[3] == ('list', None, None, None)
