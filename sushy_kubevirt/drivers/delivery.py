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


class Sender:
    """Deliver events to one subscription while ``leading()`` holds.

    :param floor: events with a key at most this were delivered already.
    """

    def __init__(self, sub, settings, policy, leading, floor):
        self.sub = sub
        self.settings = settings
        self.policy = policy
        self.leading = leading
        self.floor = floor
        #: Key of the last event delivered or given up (the checkpoint).
        self.done = floor
        self.counts = collections.Counter()
        self._queue = queue.Queue(settings.queue_size)
        self._stop = threading.Event()
        self._session = requests.Session()
        self._checked = False
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

    def stop(self):
        self._stop.set()
        try:
            self._queue.put_nowait((None, None))
        except queue.Full:
            pass  # the thread sees the flag within half a second

    def _run(self):
        while not self._stop.is_set():
            try:
                key, record = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if key is None or self._stop.is_set():
                break
            if post(self, record['EventId'], [record]):
                self.done = max(self.done, key)
        self._session.close()

    def refusal(self):
        """Why the host policy refuses the Destination now, or None."""
        url = imageurl.parse(self.sub.destination, 'Destination')
        return subscriptions.check_host(url, self.policy,
                                        self.settings.timeout)


def post(sender, event_id, records):
    """POST one Event with retries; whether it was delivered or given up.

    False only when leadership was lost or the sender stopped first (the
    next leader delivers the event again).
    """
    s = sender.settings
    body = payload(sender.sub, event_id, records)
    headers = dict(sender.sub.headers)
    headers['Content-Type'] = 'application/json'
    for attempt in range(s.retry_attempts + 1):
        if sender._stop.is_set() or not sender.leading():
            return False
        if attempt:
            sender.counts['retried'] += 1
        reason = None if sender._checked else sender.refusal()
        if reason is None:
            sender._checked = True
            try:
                answer = sender._session.post(
                    sender.sub.destination, json=body, headers=headers,
                    timeout=s.timeout, allow_redirects=False)
                if 200 <= answer.status_code < 300:
                    sender.counts['delivered'] += 1
                    return True
                reason = 'HTTP %d' % answer.status_code
            except requests.RequestException as exc:
                reason = type(exc).__name__
            sender._checked = False
        LOG.info('Event %s to subscription %s failed (attempt %d): %s',
                 event_id, sender.sub.id, attempt + 1, reason)
        if attempt < s.retry_attempts and \
                sender._stop.wait(s.retry_interval):
            return False
    sender.counts['failed'] += 1
    return True
