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

"""A light Ironic-like load whose every answer is recorded, for ``outages``.

``Traffic`` GETs Systems/{id} (and now and then Systems) from a few
threads; ``Writer`` resets one node On, ForceOff, On... Each answer is
kept as ``(monotonic time, kind, status, Retry-After, message, seconds)``
and ``summarize`` makes a histogram of a time window.
"""

import collections
import http.client
import json
import random
import threading
import time

from sushy_kubevirt.bench import stats

SYSTEMS = '/redfish/v1/Systems'
RESET = SYSTEMS + '/%s/Actions/ComputerSystem.Reset'


def send(port, method, path, body=None, timeout=30.0):
    """``(status, Retry-After, message, seconds)`` of one request.

    Over a new TCP connection, as sushy; status 0 when none came.
    """
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=timeout)
    data = None if body is None else json.dumps(body).encode()
    headers = {'Connection': 'close', 'Content-Type': 'application/json'}
    started = time.perf_counter()
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        content = response.read()
        answer = (response.status, response.getheader('Retry-After'),
                  _message(response.status, content))
    except (OSError, http.client.HTTPException) as exc:
        answer = (0, None, repr(exc))
    finally:
        conn.close()
    return answer + (round(time.perf_counter() - started, 4),)


def _message(status, content):
    if status < 400:
        return None
    try:
        error = json.loads(content)['error']
    except (ValueError, KeyError, TypeError):
        return content[:300].decode(errors='replace')
    texts = [error.get('message')] + [
        info.get('Message') for info in
        error.get('@Message.ExtendedInfo') or ()]
    return ' | '.join(t for t in texts if t)[:600]


class Recorder:
    """Threads that record ``(time, kind, status, retry_after, message)``."""

    def __init__(self, deadline_s):
        self.records = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + deadline_s
        self._threads = []

    def running(self):
        return not self._stop.is_set() and time.monotonic() < self._deadline

    def record(self, kind, answer):
        with self._lock:
            self.records.append((time.monotonic(), kind) + tuple(answer))

    def window(self, since, until=None):
        with self._lock:
            return [r for r in self.records
                    if r[0] >= since and (until is None or r[0] <= until)]

    def start(self, count=1):
        for i in range(count):
            thread = threading.Thread(target=self._loop, args=(i,),
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join(60)


class Traffic(Recorder):
    """GET Systems/{id}; the first thread's every tenth is GET Systems.

    (The collection of a large cluster is expensive to render: one
    thread's share keeps the load light.)
    """

    def __init__(self, port, ids, deadline_s, pause_s=0.1):
        super().__init__(deadline_s)
        self.port, self.ids, self.pause_s = port, ids, pause_s

    def _loop(self, index):
        rand = random.Random(index)
        for i in range(10 ** 6):
            if not self.running():
                return
            if index == 0 and i % 10 == 9:
                self.record('GET Systems', send(self.port, 'GET', SYSTEMS))
            else:
                path = '%s/%s' % (SYSTEMS, rand.choice(self.ids))
                self.record('GET System', send(self.port, 'GET', path))
            self._stop.wait(self.pause_s)


class Writer(Recorder):
    """Resets one node On, ForceOff, On...: retries a failure quickly."""

    def __init__(self, port, node, deadline_s, retry_s=0.2, settle_s=1.5):
        super().__init__(deadline_s)
        self.port, self.node = port, node
        self.retry_s, self.settle_s = retry_s, settle_s

    def _loop(self, index):
        kind = 'On'
        while self.running():
            answer = send(self.port, 'POST', RESET % self.node,
                          {'ResetType': kind})
            self.record('Reset ' + kind, answer)
            if 200 <= answer[0] < 300:
                kind = 'ForceOff' if kind == 'On' else 'On'
                self._stop.wait(self.settle_s)
            else:
                self._stop.wait(self.retry_s)

    def first_success(self, since, deadline_s):
        """Monotonic end of the first 2xx sent after ``since`` (or None)."""
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            for record in self.window(since):
                if 200 <= record[2] < 300 and record[0] - record[5] >= since:
                    return record[0]
            time.sleep(0.05)
        return None


def summarize(records):
    """Per kind: statuses, Retry-After values, first messages, latency."""
    result = {}
    for _, kind, status, retry_after, message, seconds in records:
        entry = result.setdefault(kind, {'statuses': collections.Counter(),
                                         'retry_after': set(),
                                         'messages': {}, 'seconds': []})
        entry['statuses'][str(status)] += 1
        entry['seconds'].append(seconds)
        if retry_after:
            entry['retry_after'].add(retry_after)
        if message and str(status) not in entry['messages']:
            entry['messages'][str(status)] = message
    for entry in result.values():
        entry['statuses'] = dict(sorted(entry['statuses'].items()))
        entry['retry_after'] = sorted(entry['retry_after'])
        seconds = sorted(entry.pop('seconds'))
        entry['p50_ms'] = round(stats.percentile(seconds, 0.5) * 1000, 1)
        entry['max_ms'] = round(seconds[-1] * 1000, 1)
    return result


def timeline(records, since):
    """``[seconds from since, kind, status]`` of each record."""
    return [[round(r[0] - since, 2), r[1], r[2]] for r in records]
