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

"""Event delivery: one sender thread and one bounded queue per subscriber.

A :class:`Sender` POSTs each queued event as a Redfish ``Event`` in queue
order, retrying a failed POST ``retry_attempts`` times every
``retry_interval`` seconds, then giving it up (counted). A full queue drops
the new event (counted) and never blocks the caller, so a slow or dead
subscriber delays nobody else. The host policy is applied again to the
resolved Destination before the first POST and after every failure.
"""

import collections
import logging
import queue
import threading

import requests

from sushy_kubevirt.drivers import subscriptions
from sushy_kubevirt.kubevirt import imageurl

LOG = logging.getLogger(__name__)
EVENT_TYPE = '#Event.v1_7_0.Event'
#: Outcomes counted per subscription (``/metrics``).
OUTCOMES = ('delivered', 'retried', 'failed', 'dropped')


def payload(sub, event_id, records):
    return {'@odata.type': EVENT_TYPE, 'Id': event_id, 'Name': 'Event',
            'Context': sub.context, 'Events': records}


class Destination:
    """POSTs Events to one subscription, with retries and the host policy.

    :param should_stop: ``fn()`` true when attempts must end (the sender
        stopped or lost the leadership): the event is then not done.
    """

    def __init__(self, sub, settings, policy, should_stop):
        self.sub = sub
        self.settings = settings
        self.policy = policy
        self.should_stop = should_stop
        self.counts = collections.Counter()
        self.session = requests.Session()
        self._checked = False
        self._wait = threading.Event()

    def close(self):
        self._wait.set()
        self.session.close()

    def refusal(self):
        """Why the host policy refuses the Destination now, or None."""
        url = imageurl.parse(self.sub.destination, 'Destination')
        return subscriptions.check_host(url, self.policy,
                                        self.settings.timeout)

    def post(self, event_id, records):
        """POST one Event with retries; whether it is done.

        Done: delivered (2xx), or given up after the retries (counted
        ``failed``). Not done only when :attr:`should_stop` ended the
        attempts (the next leader delivers it again).
        """
        s = self.settings
        body = payload(self.sub, event_id, records)
        headers = dict(self.sub.headers)
        headers['Content-Type'] = 'application/json'
        for attempt in range(s.retry_attempts + 1):
            if self.should_stop():
                return False
            if attempt:
                self.counts['retried'] += 1
            reason = None if self._checked else self.refusal()
            if reason is None:
                self._checked = True
                reason = self._send(body, headers)
                if reason is None:
                    self.counts['delivered'] += 1
                    return True
                self._checked = False
            LOG.info('Event %s to subscription %s failed (attempt %d): %s',
                     event_id, self.sub.id, attempt + 1, reason)
            if attempt < s.retry_attempts and \
                    self._wait.wait(s.retry_interval):
                return False
        self.counts['failed'] += 1
        return True

    def _send(self, body, headers):
        try:
            answer = self.session.post(
                self.sub.destination, json=body, headers=headers,
                timeout=self.settings.timeout, allow_redirects=False)
        except requests.RequestException as exc:
            return type(exc).__name__
        if 200 <= answer.status_code < 300:
            return None
        return 'HTTP %d' % answer.status_code


class Sender:
    """Deliver events to one subscription while ``leading()`` holds.

    :param floor: events with a key at most this were delivered already.
    """

    def __init__(self, sub, settings, policy, leading, floor):
        self.sub = sub
        self.floor = floor
        #: Key of the last event delivered or given up (the checkpoint).
        self.done = floor
        self._stop = threading.Event()
        self.destination = Destination(
            sub, settings, policy,
            lambda: self._stop.is_set() or not leading())
        self.counts = self.destination.counts
        self._queue = queue.Queue(settings.queue_size)
        self._thread = threading.Thread(
            target=self._run, daemon=True, name='events %s' % sub.id)
        self._thread.start()

    def offer(self, key, record):
        """Queue one event unless already delivered; never blocks."""
        if key <= self.floor:
            return
        try:
            self._queue.put_nowait((key, record))
        except queue.Full:
            self.counts['dropped'] += 1

    def queued(self):
        return self._queue.qsize()

    def stop(self):
        self._stop.set()
        self.destination._wait.set()
        try:
            self._queue.put_nowait((None, None))
        except queue.Full:
            pass  # the thread sees the flag within half a second

    def _run(self):
        try:
            while not self._stop.is_set():
                try:
                    key, record = self._queue.get(timeout=0.5)
                except queue.Empty:
                    continue
                if key is None or self._stop.is_set():
                    break
                if self.destination.post(record['EventId'], [record]):
                    self.done = max(self.done, key)
        finally:
            self.destination.close()


def send_once(sub, settings, policy, record):
    """POST ``record`` to ``sub`` (with retries) in a thread of its own."""
    def run():
        destination = Destination(sub, settings, policy, lambda: False)
        try:
            destination.post(record['EventId'], [record])
        finally:
            destination.close()
    threading.Thread(target=run, daemon=True,
                     name='test event %s' % sub.id).start()
