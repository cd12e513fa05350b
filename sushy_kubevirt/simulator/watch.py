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

"""Watch: chunked NDJSON streams of store events.

``serve(handler, req)`` validates the options, registers a store watcher
and streams its events through the HTTP handler: selector transitions
(ADDED/DELETED), bookmarks (periodic, before the deadline, and the
``k8s.io/initial-events-end`` one), ``timeoutSeconds`` and the stream
faults (``watch_error``, ``drop``, ``close``, ``stall``, ``event_delay``).
"""

import json
import time

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import encoding
from sushy_kubevirt.simulator import options
from sushy_kubevirt.simulator import selectors

INITIAL_EVENTS_END = 'k8s.io/initial-events-end'


def serve(handler, req):
    """Answer 200 and stream until the deadline, a fault or a close."""
    api = handler.api
    watcher, match, end_bookmark = _open(api, req)
    timeout = _deadline(api, req)
    plan = api.sim.faults.stream_plan(req.method, req.path, req.query)
    try:
        handler.begun = True
        handler.send_response(200)
        handler.send_header('Content-Type', 'application/json')
        handler.send_header('Transfer-Encoding', 'chunked')
        handler.send_header('Cache-Control', 'no-cache, private')
        handler.end_headers()
        handler.wfile.flush()
        stream = _Stream(handler, req, watcher, match)
        stream.run(end_bookmark, timeout, plan)
    finally:
        watcher.close()


def _open(api, req):
    """Validate a watch request and register its watcher."""
    q = req.query
    options.check_watch(q, api.sim.watchlist_enabled)
    match = selectors.matcher(q.get('labelSelector'),
                              q.get('fieldSelector'), req.rt)
    if req.name:
        by_name = selectors.parse_fields('metadata.name=' + req.name,
                                         req.rt)
        match = by_name if match is None else (
            lambda o, m=match: m(o) and by_name(o))
    rv = q.get('resourceVersion', '')
    send_initial = q.get('sendInitialEvents', '').lower()
    if not send_initial and not q.get('resourceVersionMatch') and \
            rv in ('', '0') and api.sim.watchlist_enabled:
        send_initial = 'true'
    initial = send_initial == 'true'
    if rv not in ('', '0'):
        options.parse_rv(rv, watch=True)
    if initial:
        api.store.sync_type(req.rt)
    watcher = api.store.watch(req.rt, req.namespace,
                              None if initial else rv,
                              too_large_wait=api.sim.too_large_wait)
    return watcher, match, initial and req.flag('allowWatchBookmarks')


def _deadline(api, req):
    """``timeoutSeconds``, else kube's ``min_request_timeout`` x [1, 2)."""
    if req.query.get('timeoutSeconds'):
        return float(options.int_param(req.query, 'timeoutSeconds'))
    return api.sim.min_request_timeout * (1 + api.random.random())


class _Stream:
    """One watch response being written."""

    def __init__(self, handler, req, watcher, match):
        self.handler = handler
        self.store = handler.api.store
        self.dumps = handler.api.json_cache.dumps
        self.rt = req.rt
        self.bookmarks = req.flag('allowWatchBookmarks')
        self.watcher = watcher
        self.match = match
        self.sent = 0

    def run(self, end_bookmark, timeout, plan):
        watcher = self.watcher
        interval = self.handler.api.sim.bookmark_interval
        now = time.monotonic()
        deadline = now + timeout
        next_bookmark = now + interval
        final_bookmark = deadline - min(2.0, interval)
        initial = len(watcher.queue) if end_bookmark else None
        initial_rv = watcher.min_rv
        last = None
        if 'stall' in plan:
            self._stall(plan['stall'].get('seconds'), deadline)
            return
        event_delay = plan.get('event_delay', {}).get('seconds', 0)
        while True:
            if self._fault_due(plan):
                return
            if initial == 0:
                initial = None
                self._send(_bookmark(self.rt, initial_rv, end=True))
                continue
            now = time.monotonic()
            if now >= deadline:
                break
            wake = deadline
            if self.bookmarks:
                wake = min(wake, next_bookmark)
                if final_bookmark > now:
                    wake = min(wake, final_bookmark)
            event = watcher.next(max(0.0, wake - now))
            if event is None:
                if watcher.closed:
                    break
                now = time.monotonic()
                if self.bookmarks and (now >= next_bookmark or
                                       final_bookmark <= now < deadline):
                    if final_bookmark <= now:
                        final_bookmark = float('inf')
                    next_bookmark = now + interval
                    rv = self._bookmark_rv()
                    if rv is not None:
                        self._send(_bookmark(self.rt, rv))
                continue
            if isinstance(event, dict):  # a Status from the store: ERROR
                last = _error_line(event)
                self.sent += 1
                break
            if initial is not None:
                initial -= 1
            line = self._line(event)
            if line is None:
                continue
            if event_delay:
                time.sleep(event_delay)
            self._send(line)
            self.handler.entry['events'] = self.sent
        self._end(last)

    def _send(self, line):
        self.handler.wfile.write(encoding.chunked(line))
        self.handler.wfile.flush()
        self.sent += 1

    def _end(self, last=None):
        """Log the watch, then send its last line and the terminator."""
        self.handler.entry['events'] = self.sent
        self.handler.record(200)
        data = b'' if last is None else encoding.chunked(last)
        self.handler.wfile.write(data + b'0\r\n\r\n')
        self.handler.wfile.flush()

    def _fault_due(self, plan):
        """Apply stream faults due after ``sent`` events; True = stop."""
        sent = self.sent
        error = plan.get('watch_error')
        if error is not None and sent >= error['after']:
            code = error['code']
            status = apistatus.from_code(
                code, error.get('message')).to_status()
            if code == 410 and not error.get('message'):
                status['message'] = 'too old resource version: injected'
            self._end(_error_line(status))
            return True
        drop = plan.get('drop')
        if drop is not None and sent >= drop['after']:
            self.handler.entry['events'] = sent
            self.handler.record(200)
            if drop.get('partial', True):
                line = b'{"type":"MODIFIED","object":{"kind":"%s"' % (
                    self.rt.kind.encode())
                self.handler.wfile.write(b'%x\r\n%s' % (len(line) + 40,
                                                        line))
                self.handler.wfile.flush()
            self.handler.abort()
            return True
        close = plan.get('close')
        if close is not None and sent >= close['after']:
            self._end()
            return True
        return False

    def _stall(self, seconds, deadline):
        end = time.monotonic() + seconds if seconds is not None else deadline
        with self.store.condition:
            while self.handler.api.running and time.monotonic() < end:
                self.store.condition.wait(min(0.5, max(
                    0.0, end - time.monotonic())))
        self.handler.record(200)
        self.handler.abort()

    def _bookmark_rv(self):
        """The type's RV if newer than the watch's start, else None.

        Also None while an event is undelivered. As kube's cache watcher:
        a bookmark never repeats the RV the watch started from.
        """
        with self.store.condition:
            if self.watcher.queue:
                return None
            rv = self.store.type_resource_version(self.rt)
            return rv if rv > self.watcher.min_rv else None

    def _line(self, event):
        """The NDJSON line for ``event`` after selector transitions."""
        etype = event.type
        obj = event.obj
        if self.match is not None:
            passes = self.match(obj)
            if etype == 'MODIFIED':
                was = self.match(event.old)
                if passes and not was:
                    etype = 'ADDED'
                elif was and not passes:
                    obj = dict(event.old, metadata=dict(
                        event.old['metadata'],
                        resourceVersion=str(event.rv)))
                    return encoding.event_line('DELETED', obj)
                elif not passes:
                    return None
            elif not passes:
                return None
        line = event.cache.get(etype)
        if line is None:
            line = encoding.event_line(etype, obj, self.dumps(obj)
                                       if etype != 'DELETED' else None)
            event.cache[etype] = line
        return line


def _bookmark(rt, rv, end=False):
    meta = {'resourceVersion': str(rv)}
    if end:
        meta['annotations'] = {INITIAL_EVENTS_END: 'true'}
    return encoding.compact({'type': 'BOOKMARK', 'object': {
        'kind': rt.kind, 'apiVersion': rt.api_version,
        'metadata': meta}}).encode() + b'\n'


def _error_line(status):
    return json.dumps({'type': 'ERROR', 'object': status}).encode() + b'\n'
